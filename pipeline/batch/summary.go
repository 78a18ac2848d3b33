package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/pallasify/pallasify/transforms/safefs"
)

func (r *runner) writeSummary(sum *Summary) error {
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	var md bytes.Buffer
	WriteMarkdown(&md, sum)
	for name, data := range map[string][]byte{"summary.json": js, "summary.md": md.Bytes()} {
		masked := r.opts.Secrets.String(string(data))
		if err := safefs.WriteBytes(filepath.Join(r.opts.RunDir, name), []byte(masked), 0o644); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
	}
	return nil
}

// WriteMarkdown writes the summary table.
func WriteMarkdown(w io.Writer, sum *Summary) {
	fmt.Fprintf(w, "## pallasify batch\n\n%d repositories: %d done, %d failed, %d interrupted; %d skipped as already handled.\n\n",
		len(sum.Repos), sum.Done, sum.Failed, sum.Interrupted, sum.Skipped)
	fmt.Fprintf(w, "| # | Repository | State | Files changed | Sites (fixed / manual) | Kernels | Delivery | Time | Error |\n")
	fmt.Fprintf(w, "|---:|---|---|---:|---|---:|---|---:|---|\n")
	for i, s := range sum.Repos {
		state := s.State
		if s.Skipped {
			state += " (earlier run)"
		}
		del := "-"
		if d := s.Delivery; d != nil {
			del = d.Status
			if d.PR != nil {
				del = fmt.Sprintf("%s, [PR #%d](%s) %s", d.Status, d.PR.Number, d.PR.URL, d.PR.Action)
			}
		}
		if s.Note != "" {
			del += " (" + s.Note + ")"
		}
		fmt.Fprintf(w, "| %d | `%s` | %s | %d | %d (%d / %d) | %d | %s | %.1fs | %s |\n", i+1, cell(s.Source), state,
			s.FilesChanged, s.Sites, s.Fixed, s.Manual, s.Kernels, cell(del), s.Seconds, cell(firstLine(s.Error)))
	}
}

func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// Progress shows per-repository progress.
type Progress interface {
	// Start begins tracking one repository.
	Start(id string) Tracker
	// Wait flushes the display after the run.
	Wait()
}

// Tracker follows one repository.
type Tracker interface {
	Stage(name string)
	Finish(state string)
}

type nopTracker struct{}

func (nopTracker) Stage(string)  {}
func (nopTracker) Finish(string) {}

// stages a repository goes through (clone, migrate, deliver).
const stages = 3

// Bars is a Progress drawing one bar per active repository (for a TTY).
type Bars struct{ p *mpb.Progress }

// NewBars draws bars on w (usually stderr on a TTY).
func NewBars(w io.Writer) *Bars {
	return &Bars{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(30), mpb.WithAutoRefresh())}
}

// Writer prints lines above the bars (route log output through it).
func (b *Bars) Writer() io.Writer { return b.p }

// Start implements Progress.
func (b *Bars) Start(id string) Tracker {
	t := &barTracker{}
	t.stage.Store("queued")
	t.bar = b.p.AddBar(stages,
		mpb.PrependDecorators(decor.Name(id, decor.WCSyncSpaceR), decor.Any(func(decor.Statistics) string { return t.get() }, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO)),
		mpb.BarRemoveOnComplete())
	return t
}

// Wait implements Progress.
func (b *Bars) Wait() { b.p.Wait() }

type barTracker struct {
	bar   *mpb.Bar
	stage atomic.Value // string, read by the render goroutine
}

func (t *barTracker) get() string { return t.stage.Load().(string) }

func (t *barTracker) Stage(name string) {
	if t.get() != "queued" {
		t.bar.Increment()
	}
	t.stage.Store(name)
}

func (t *barTracker) Finish(state string) {
	t.stage.Store(state)
	t.bar.SetTotal(-1, true)
}
