package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/batch"
)

// Job kinds.
const (
	KindRepo = "pallasify_repo"
	KindBot  = "pallasify_bot"
)

// RepoArgs is one repository of a batch. The fields tagged unique are the
// job's identity: the same repository, base commit and options are one job,
// however often they are submitted.
type RepoArgs struct {
	Source     string `json:"source" river:"unique"`
	Branch     string `json:"branch,omitempty" river:"unique"`
	BaseCommit string `json:"base_commit" river:"unique"`
	Target     string `json:"target,omitempty" river:"unique"`
	Push       bool   `json:"push" river:"unique"`
	PR         bool   `json:"pr" river:"unique"`
	// Fingerprint names the submitter's kernel-stage settings (a change
	// makes a new job); Rerun is set by --force: a new value, a new job.
	Fingerprint string `json:"fingerprint,omitempty" river:"unique"`
	Rerun       string `json:"rerun,omitempty" river:"unique"`
	// ID names the repository's directory in the worker's run directory.
	ID string `json:"id"`
	// List is the batch list the job came from (for `batch status`).
	List    string        `json:"list,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Kind implements river.JobArgs.
func (RepoArgs) Kind() string { return KindRepo }

// uniqueStates keep a job's identity through every state, failed ones
// included: a failed repository runs again only when asked (RetryFailed).
var uniqueStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStateCancelled, rivertype.JobStateCompleted,
	rivertype.JobStateDiscarded, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RepoArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRepos, MaxAttempts: 5,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates}}
}

// Entry is the batch entry the job runs.
func (a RepoArgs) Entry() batch.Entry {
	push, pr := a.Push || a.PR, a.PR
	return batch.Entry{ID: a.ID, Source: a.Source, Branch: a.Branch, Target: a.Target, Push: &push, PR: &pr, Timeout: a.Timeout}
}

// Enqueued is the queue's answer for one submitted job.
type Enqueued struct {
	Args RepoArgs
	Job  *rivertype.JobRow
	// Duplicate: the job already existed (submitted before); nothing new was queued.
	Duplicate bool
	// Retried: a failed duplicate was made available again (RetryFailed).
	Retried bool
}

// SubmitOptions tune Submit.
type SubmitOptions struct {
	// RetryFailed makes failed (cancelled or discarded) duplicates run again.
	RetryFailed bool
}

// Submit enqueues repository jobs; duplicates of existing jobs are reported,
// not queued again.
func (q *Queue) Submit(ctx context.Context, jobs []RepoArgs, opts SubmitOptions) ([]Enqueued, error) {
	out := make([]Enqueued, 0, len(jobs))
	for _, a := range jobs {
		res, err := q.eng.insert(ctx, a, nil)
		if err != nil {
			return out, fmt.Errorf("queue: enqueue %s: %w", a.Source, err)
		}
		e := Enqueued{Args: a, Job: res.Job, Duplicate: res.UniqueSkippedAsDuplicate}
		if e.Duplicate && opts.RetryFailed && failed(e.Job.State) {
			row, err := q.eng.retry(ctx, e.Job.ID)
			if err != nil {
				return out, fmt.Errorf("queue: retry %s: %w", a.Source, err)
			}
			if err := q.clearProgress(ctx, row.ID); err != nil {
				return out, err
			}
			e.Job, e.Retried = row, true
		}
		out = append(out, e)
	}
	return out, nil
}

func failed(s rivertype.JobState) bool {
	return s == rivertype.JobStateCancelled || s == rivertype.JobStateDiscarded
}

// Finalized reports whether a job will not run again (completed, failed).
func Finalized(s rivertype.JobState) bool {
	return s == rivertype.JobStateCompleted || failed(s)
}

// Job returns a job's current row.
func (q *Queue) Job(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	row, err := q.eng.get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("queue: job %d: %w", id, err)
	}
	return row, nil
}

// Wait polls until every job in ids is finalized (or ctx ends) and returns
// their last rows.
func (q *Queue) Wait(ctx context.Context, ids []int64, every time.Duration) (map[int64]*rivertype.JobRow, error) {
	rows := map[int64]*rivertype.JobRow{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		pending := 0
		for _, id := range ids {
			if r, ok := rows[id]; ok && Finalized(r.State) {
				continue
			}
			r, err := q.Job(ctx, id)
			if err != nil {
				return rows, err
			}
			rows[id] = r
			if !Finalized(r.State) {
				pending++
			}
		}
		if pending == 0 {
			return rows, nil
		}
		select {
		case <-ctx.Done():
			return rows, ctx.Err()
		case <-t.C:
		}
	}
}

// ResolveBase returns the commit a job would migrate: the head of branch
// (default: the remote's HEAD) of a git URL, listed without cloning, or the
// checked-out commit of a local repository ("" for a directory outside git).
// auth is used for the listing only (give it only for hosts that should
// see the token).
func ResolveBase(ctx context.Context, source, branch string, auth transport.AuthMethod) (string, error) {
	if !acquire.IsRemote(source) {
		return localHead(source, branch)
	}
	clean, _ := acquire.StripCredentials(source)
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{clean}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: auth})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", clean, err)
	}
	want := plumbing.HEAD
	if branch != "" {
		want = plumbing.NewBranchReferenceName(branch)
	}
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	for hops := 0; hops < 5; hops++ {
		r, ok := byName[want]
		if !ok {
			return "", fmt.Errorf("%s has no %s", clean, strings.TrimPrefix(want.String(), "refs/heads/"))
		}
		if r.Type() == plumbing.HashReference {
			return r.Hash().String(), nil
		}
		want = r.Target()
	}
	return "", fmt.Errorf("%s: %s: symbolic reference loop", clean, want)
}

func localHead(path, branch string) (string, error) {
	repo, err := git.PlainOpenWithOptions(path, &git.PlainOpenOptions{DetectDotGit: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	name := plumbing.HEAD
	if branch != "" {
		name = plumbing.NewBranchReferenceName(branch)
	}
	ref, err := repo.Reference(name, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return ref.Hash().String(), nil
}
