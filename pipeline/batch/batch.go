// Package batch runs pallasify over many repositories: bounded concurrency
// (conc), continue-on-error, a per-repo timeout, and a run directory holding
// each repository's status and artifacts (diff, report, delivery result) so
// that running the same command again resumes: finished repositories are
// skipped, failed ones are retried only with RetryFailed, and ones that were
// running when the process died are run again. A Markdown and JSON summary
// is written at the end.
package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/panics"
	"github.com/sourcegraph/conc/pool"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver"
	"github.com/pallasify/pallasify/pipeline/gh"
	"github.com/pallasify/pallasify/pipeline/redact"
	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/safefs"
)

// Migrator runs the pipeline over a local tree with a resolved config.
type Migrator func(ctx context.Context, root string, cfg *config.Config) (*pipeline.Run, error)

// PipelineMigrator is the production Migrator: pipeline.Migrate with the
// config's target, rule selection, fix level and path filters, and the
// kernel stages as `migrate` runs them by default (DefaultStages).
func PipelineMigrator(version string) Migrator {
	return DefaultStages().Migrator(version)
}

// PipelineOptions maps a config onto pipeline options.
func PipelineOptions(root string, cfg *config.Config, version string) pipeline.Options {
	o := pipeline.Options{Root: root, Target: rule.Target(cfg.Target), UnsafeFixes: cfg.UnsafeFixes, Mark: cfg.Mark,
		Select: cfg.Select, Ignore: cfg.Ignore, Include: cfg.Include, Exclude: cfg.Exclude, Version: version}
	if cfg.Bench.Enabled {
		o.Bench = &pipeline.BenchOptions{Dir: cfg.Bench.Dir, Config: cfg.Bench.Config}
	}
	return o
}

// States of a repository in a run.
const (
	StatePending     = "pending"
	StateRunning     = "running"
	StateDone        = "done"
	StateFailed      = "failed"
	StateInterrupted = "interrupted"
)

// Status is one repository's record in the run directory (status.json).
type Status struct {
	ID           string          `json:"id"`
	Source       string          `json:"source"`
	State        string          `json:"state"`
	Error        string          `json:"error,omitempty"`
	Attempts     int             `json:"attempts"`
	StartedAt    time.Time       `json:"started_at,omitzero"`
	FinishedAt   time.Time       `json:"finished_at,omitzero"`
	Seconds      float64         `json:"seconds"`
	FilesChanged int             `json:"files_changed"`
	Sites        int             `json:"sites"`
	Fixed        int             `json:"fixed"`
	Manual       int             `json:"manual"`
	Kernels      int             `json:"kernels"`
	Delivery     *deliver.Result `json:"delivery,omitempty"`
	// BaseCommit is the commit migrated; OptionsKey identifies the options
	// it was migrated with (OptionsKey). A finished repository whose base
	// or options changed since runs again.
	BaseCommit string `json:"base_commit,omitempty"`
	OptionsKey string `json:"options_key,omitempty"`
	Note       string `json:"note,omitempty"`
	// Skipped is set in the summary (not on disk) when this run did not touch it.
	Skipped bool `json:"skipped,omitempty"`
}

// Options for Run.
type Options struct {
	// RunDir holds per-repo status and artifacts; re-using it resumes.
	RunDir string
	// ConfigPath is the operator's config file (trusted), merged after each
	// repository's own pallasify.yaml (untrusted). Empty: defaults.
	ConfigPath string
	// Migrate runs the pipeline (default PipelineMigrator(Version)).
	Migrate Migrator
	// Push and PR deliver each repository (per-repo options may override).
	Push, PR bool
	// RetryFailed re-runs repositories that failed before.
	RetryFailed bool
	// Force runs every repository again, finished or not.
	Force bool
	// Fingerprint names the settings the Migrator uses that the options
	// key cannot see (the kernel stages' flags): a change reruns everything.
	Fingerprint string
	// Concurrency bounds repositories in flight (default: config batch.concurrency).
	Concurrency int
	// Timeout bounds one repository (default: config batch.timeout).
	Timeout time.Duration
	// Token authenticates clones and pushes, over HTTPS to TokenHosts only.
	Token string
	// TokenHosts are the hosts Token belongs to (default: github.com;
	// config.GitHubConfig.TokenHosts).
	TokenHosts []string
	// GitHub opens pull requests (needed for PR).
	GitHub deliver.PRService
	// Workspace is where clones go (default: <RunDir>/work); Keep keeps them.
	Workspace string
	Keep      bool
	Version   string
	// Log receives JSON log lines besides <RunDir>/batch.log (may be nil).
	Log io.Writer
	// Secrets are masked in logs and artifacts (Token is added).
	Secrets *redact.Secrets
	// Progress shows per-repo progress (nil: none).
	Progress Progress
}

// Summary is the outcome of a run over the whole list.
type Summary struct {
	RunDir      string   `json:"run_dir"`
	Repos       []Status `json:"repos"`
	Done        int      `json:"done"`
	Failed      int      `json:"failed"`
	Interrupted int      `json:"interrupted"`
	Skipped     int      `json:"skipped"` // finished (or failed) earlier and not run again
	Ran         int      `json:"ran"`
}

type runner struct {
	opts     Options
	log      *slog.Logger
	limiter  acquire.Limiter
	cfg      *config.Config // operator config (for batch settings)
	prBudget atomic.Int64
}

// Runner runs single repositories with the settings one run shares (clone
// limiter, PR budget, log, run directory). Run uses one; so do the queue's
// workers (pipeline/queue), one per process.
type Runner struct {
	r       *runner
	logFile *os.File
}

// NewRunner validates opts, fills defaults from the operator config and
// opens <RunDir>/batch.log. Close it when done.
func NewRunner(opts Options) (*Runner, error) {
	if opts.RunDir == "" {
		return nil, errors.New("batch: no run directory")
	}
	if err := os.MkdirAll(filepath.Join(opts.RunDir, "repos"), 0o755); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	if opts.Secrets == nil {
		opts.Secrets = &redact.Secrets{}
	}
	opts.Secrets.Add(opts.Token)
	cfg, _, err := config.Load("", true, opts.ConfigPath)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	if opts.Migrate == nil {
		opts.Migrate = PipelineMigrator(opts.Version)
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = cfg.Batch.Concurrency
	}
	if opts.Timeout <= 0 {
		opts.Timeout = cfg.Batch.Timeout
	}
	if opts.Workspace == "" {
		opts.Workspace = filepath.Join(opts.RunDir, "work")
	}
	logFile, err := os.OpenFile(filepath.Join(opts.RunDir, "batch.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	var lw io.Writer = logFile
	if opts.Log != nil {
		lw = io.MultiWriter(logFile, opts.Log)
	}
	r := &runner{opts: opts, log: opts.Secrets.JSONLogger(lw, slog.LevelInfo), cfg: cfg,
		limiter: acquire.NewLimiter(cfg.Batch.CloneConcurrency)}
	r.prBudget.Store(int64(cfg.PR.MaxNewPerRun))
	if cfg.PR.MaxNewPerRun == 0 {
		r.prBudget.Store(1 << 40)
	}
	return &Runner{r: r, logFile: logFile}, nil
}

// RunOne processes one repository (prev: its earlier status, may be nil)
// and records its status.json; per-repo failures are in the Status.
func (rn *Runner) RunOne(ctx context.Context, e Entry, prev *Status) Status {
	return rn.r.runOne(ctx, e, prev)
}

// Options are the runner's options with defaults filled in.
func (rn *Runner) Options() Options { return rn.r.opts }

// Logger is the run's JSON logger (masked).
func (rn *Runner) Logger() *slog.Logger { return rn.r.log }

// Close closes the run's log.
func (rn *Runner) Close() error { return rn.logFile.Close() }

// Run processes entries. It returns an error only when the run itself
// cannot proceed (run dir, config); per-repo failures are in the Summary.
func Run(ctx context.Context, entries []Entry, opts Options) (*Summary, error) {
	rn, err := NewRunner(opts)
	if err != nil {
		return nil, err
	}
	defer rn.Close()
	r := rn.r
	opts = r.opts

	statuses := make([]Status, len(entries))
	p := pool.New().WithMaxGoroutines(opts.Concurrency)
	r.log.Info("batch start", "repos", len(entries), "concurrency", opts.Concurrency, "retry_failed", opts.RetryFailed)
	for i, e := range entries {
		prev, _ := r.readStatus(e.ID)
		p.Go(func() {
			if why, skip := r.skip(ctx, e, prev); skip {
				prev.Skipped = true
				statuses[i] = *prev
				return
			} else if why != "" {
				r.log.Info("repo runs again", "repo", e.Source, "id", e.ID, "why", why)
			}
			statuses[i] = r.runOne(ctx, e, prev)
		})
	}
	p.Wait()

	sum := &Summary{RunDir: opts.RunDir, Repos: statuses}
	for _, s := range statuses {
		if s.Skipped {
			sum.Skipped++
		} else {
			sum.Ran++
		}
		switch s.State {
		case StateDone:
			sum.Done++
		case StateFailed:
			sum.Failed++
		case StateInterrupted, StateRunning, StatePending:
			sum.Interrupted++
		}
	}
	if err := r.writeSummary(sum); err != nil {
		return sum, err
	}
	r.log.Info("batch end", "done", sum.Done, "failed", sum.Failed, "interrupted", sum.Interrupted, "skipped", sum.Skipped)
	return sum, nil
}

// skip decides whether a repository with an earlier status is left alone:
// it finished (or failed, without RetryFailed) on the commit it would be
// migrated at now, with the same options, and Force is off. why says what
// changed when it runs again.
func (r *runner) skip(ctx context.Context, e Entry, prev *Status) (why string, skip bool) {
	if prev == nil || r.opts.Force {
		return "", false
	}
	if prev.State != StateDone && !(prev.State == StateFailed && !r.opts.RetryFailed) {
		return "", false
	}
	if prev.State == StateFailed {
		return "", true // failed ones run again only when asked
	}
	if key := r.optionsKey(e); prev.OptionsKey != key {
		return "options changed", false
	}
	head, err := acquire.ResolveHead(ctx, e.Source, e.Branch, acquire.Credentials{Token: r.opts.Token, Hosts: r.opts.TokenHosts})
	if err != nil {
		return "the base commit cannot be listed: " + r.opts.Secrets.String(err.Error()), false
	}
	if head != prev.BaseCommit {
		return fmt.Sprintf("new commits (%.12s → %.12s)", prev.BaseCommit, head), false
	}
	return "", true
}

// OptionsKey identifies what a repository's run depends on besides its
// base commit: the pallasify version, the operator config's bytes, the
// entry's options, the effective push/pr, and the caller's Fingerprint.
func (rn *Runner) OptionsKey(e Entry) string { return rn.r.optionsKey(e) }

func (r *runner) optionsKey(e Entry) string {
	h := sha256.New()
	var cfgBytes []byte
	if r.opts.ConfigPath != "" {
		cfgBytes, _ = os.ReadFile(r.opts.ConfigPath)
	}
	push, pr := r.opts.Push, r.opts.PR
	if e.Push != nil {
		push = *e.Push
	}
	if e.PR != nil {
		pr = *e.PR
	}
	fmt.Fprintf(h, "version=%s\nconfig=%x\nbranch=%s\ntarget=%s\npush=%v\npr=%v\nstages=%s\n",
		r.opts.Version, sha256.Sum256(cfgBytes), e.Branch, e.Target, push || pr, pr, r.opts.Fingerprint)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (r *runner) repoDir(id string) string { return filepath.Join(r.opts.RunDir, "repos", id) }

func (r *runner) readStatus(id string) (*Status, error) {
	data, err := os.ReadFile(filepath.Join(r.repoDir(id), "status.json"))
	if err != nil {
		return nil, err
	}
	var s Status
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func (r *runner) writeStatus(s *Status) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return r.writeArtifact(s.ID, "status.json", data)
}

// writeArtifact writes a file under the repo's dir, atomically and masked.
func (r *runner) writeArtifact(id, name string, data []byte) error {
	dir := r.repoDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return safefs.WriteBytes(filepath.Join(dir, name), []byte(r.opts.Secrets.String(string(data))), 0o644)
}

func (r *runner) runOne(ctx context.Context, e Entry, prev *Status) (st Status) {
	st = Status{ID: e.ID, Source: e.Source, State: StateRunning, StartedAt: time.Now().UTC()}
	if prev != nil {
		st.Attempts = prev.Attempts
	}
	st.Attempts++
	log := r.log.With("repo", e.Source, "id", e.ID, "attempt", st.Attempts)
	var track Tracker = nopTracker{}
	if r.opts.Progress != nil {
		track = r.opts.Progress.Start(e.ID)
	}
	if err := r.writeStatus(&st); err != nil {
		st.State, st.Error = StateFailed, "write status: "+err.Error()
		return st
	}
	log.Info("repo start")
	timeout := r.opts.Timeout
	if e.Timeout > 0 {
		timeout = e.Timeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if rec := panics.Try(func() { err = r.process(rctx, e, &st, log, track) }); rec != nil {
		err = rec.AsError()
	}
	st.FinishedAt = time.Now().UTC()
	st.Seconds = st.FinishedAt.Sub(st.StartedAt).Seconds()
	switch {
	case err == nil:
		st.State = StateDone
	case ctx.Err() != nil:
		st.State, st.Error = StateInterrupted, "interrupted: "+ctx.Err().Error()
	case errors.Is(err, context.DeadlineExceeded) || rctx.Err() != nil:
		st.State, st.Error = StateFailed, fmt.Sprintf("timed out after %s: %v", timeout, err)
	default:
		st.State, st.Error = StateFailed, err.Error()
	}
	st.Error = r.opts.Secrets.String(st.Error)
	if werr := r.writeStatus(&st); werr != nil {
		log.Error("write status", "err", werr)
	}
	if st.State == StateDone {
		log.Info("repo done", "files_changed", st.FilesChanged, "seconds", st.Seconds)
	} else {
		log.Error("repo "+st.State, "err", st.Error)
	}
	track.Finish(st.State)
	return st
}

func (r *runner) process(ctx context.Context, e Entry, st *Status, log *slog.Logger, track Tracker) error {
	track.Stage("clone")
	src, err := acquire.Open(ctx, e.Source, acquire.Options{Workspace: r.opts.Workspace, Keep: r.opts.Keep,
		Token: r.opts.Token, TokenHosts: r.opts.TokenHosts, Branch: e.Branch, Limiter: r.limiter})
	if err != nil {
		return err
	}
	defer src.Cleanup()
	st.OptionsKey = r.optionsKey(e)
	if !src.Head.IsZero() {
		st.BaseCommit = src.Head.String()
	}
	cfg, probs, err := config.Load(src.Dir, false, r.opts.ConfigPath)
	for _, p := range probs {
		if p.Warning {
			log.Warn("config", "problem", p.String())
		}
	}
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if e.Target != "" {
		cfg.Target = e.Target
	}
	track.Stage("migrate")
	run, err := r.opts.Migrate(ctx, src.Dir, cfg)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	rep := report.Build(run, "migrate", nil)
	st.FilesChanged, st.Sites, st.Fixed, st.Manual, st.Kernels = rep.FilesChanged, rep.Sites, rep.AutoFixable, rep.Manual, len(rep.Kernels)
	if err := r.writeArtifact(e.ID, "diff.patch", run.Patch()); err != nil {
		return err
	}
	md, err := deliver.RenderMarkdown(run)
	if err != nil {
		return err
	}
	if err := r.writeArtifact(e.ID, "report.md", md); err != nil {
		return err
	}
	var js bytes.Buffer
	if err := report.Write(&js, rep, report.JSON); err != nil {
		return err
	}
	if err := r.writeArtifact(e.ID, "report.json", js.Bytes()); err != nil {
		return err
	}
	push, pr := r.opts.Push, r.opts.PR
	if e.Push != nil {
		push = *e.Push
	}
	if e.PR != nil {
		pr = *e.PR
	}
	if !push && !pr {
		return nil
	}
	took := false
	if pr {
		if r.prBudget.Add(-1) < 0 {
			r.prBudget.Add(1)
			pr, st.Note = false, "pr.max_new_per_run reached: pushed without a pull request"
		} else {
			took = true
		}
	}
	track.Stage("deliver")
	res, err := deliver.Run(ctx, src, run, deliver.Options{Config: cfg, Version: r.opts.Version, Push: true, PR: pr,
		GitHub: r.opts.GitHub, Logger: log, Reproduce: fmt.Sprintf("pallasify migrate %s --target %s", e.Source, cfg.Target)})
	st.Delivery = res
	if took && (res == nil || res.PR == nil || res.PR.Action != gh.Created) {
		r.prBudget.Add(1) // only new PRs count against the cap
	}
	return err
}
