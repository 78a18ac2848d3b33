package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// JobView is one repository job as `batch status` shows it.
type JobView struct {
	ID          int64      `json:"id"`
	State       string     `json:"state"`
	Attempt     int        `json:"attempt"`
	Args        RepoArgs   `json:"args"`
	Progress    *Progress  `json:"progress,omitempty"`
	Error       string     `json:"error,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	FinalizedAt *time.Time `json:"finalized_at,omitempty"`
}

// RepoJobs lists the repository jobs (of one batch list when list is not
// empty), oldest first, with their recorded progress.
func (q *Queue) RepoJobs(ctx context.Context, list string) ([]JobView, error) {
	var out []JobView
	params := river.NewJobListParams().Kinds(KindRepo).First(1000).OrderBy(river.JobListOrderByID, river.SortOrderAsc)
	for {
		res, err := q.eng.list(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("queue: list jobs: %w", err)
		}
		for _, row := range res.Jobs {
			v, err := q.view(ctx, row)
			if err != nil {
				return nil, err
			}
			if list == "" || v.Args.List == list {
				out = append(out, v)
			}
		}
		if len(res.Jobs) < 1000 || res.LastCursor == nil {
			break
		}
		params = params.After(res.LastCursor)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (q *Queue) view(ctx context.Context, row *rivertype.JobRow) (JobView, error) {
	v := JobView{ID: row.ID, State: string(row.State), Attempt: row.Attempt, CreatedAt: row.CreatedAt, FinalizedAt: row.FinalizedAt}
	if err := json.Unmarshal(row.EncodedArgs, &v.Args); err != nil {
		return v, fmt.Errorf("queue: job %d: %w", row.ID, err)
	}
	p, err := q.Progress(ctx, row.ID)
	if err != nil {
		return v, err
	}
	v.Progress = p
	if p != nil && p.Status != nil && p.Status.Error != "" {
		v.Error = p.Status.Error
	} else if n := len(row.Errors); n > 0 {
		v.Error = row.Errors[n-1].Error
	}
	return v, nil
}

// WriteTable prints jobs as a Markdown table.
func WriteTable(w io.Writer, jobs []JobView) {
	counts := map[string]int{}
	for _, j := range jobs {
		counts[j.State]++
	}
	var parts []string
	for _, s := range []string{"available", "scheduled", "running", "retryable", "completed", "cancelled", "discarded", "pending"} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	fmt.Fprintf(w, "%d jobs: %s\n\n", len(jobs), strings.Join(parts, ", "))
	if len(jobs) == 0 {
		return
	}
	fmt.Fprintln(w, "| Job | Repository | Base | Options | State | Attempt | Stage | Worker | Pushed | PR | Error |")
	fmt.Fprintln(w, "|---:|---|---|---|---|---:|---|---|---|---:|---|")
	for _, j := range jobs {
		stage, worker, pushed, pr := "-", "-", "-", "-"
		if p := j.Progress; p != nil {
			stage, worker = p.Stage, p.Worker
			if p.PushedCommit != "" {
				pushed = short(p.PushedCommit)
			}
			if p.PR > 0 {
				pr = fmt.Sprintf("#%d", p.PR)
			}
		}
		repo := j.Args.Source
		if j.Args.Branch != "" {
			repo += "@" + j.Args.Branch
		}
		fmt.Fprintf(w, "| %d | `%s` | %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", j.ID, cell(repo), orDash(short(j.Args.BaseCommit)),
			options(j.Args), j.State, j.Attempt, stage, cell(worker), pushed, pr, cell(firstLine(j.Error)))
	}
}

func options(a RepoArgs) string {
	var o []string
	if a.Target != "" {
		o = append(o, "target="+a.Target)
	}
	if a.PR {
		o = append(o, "pr")
	} else if a.Push {
		o = append(o, "push")
	}
	if a.Rerun != "" {
		o = append(o, "forced")
	}
	if len(o) == 0 {
		return "dry run"
	}
	return strings.Join(o, " ")
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cell(s string) string { return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
