package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/riverqueue/river/rivertype"
	"github.com/sourcegraph/conc/pool"

	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/queue"
	"github.com/pallasify/pallasify/transforms/safefs"
)

// queueEnv names the variable that points workers, batch and bot at a queue.
const queueEnv = "PALLASIFY_QUEUE"

// queueURL picks the queue: the flag, then $PALLASIFY_QUEUE, then def.
func queueURL(flag string, getenv func(string) string, def string) string {
	if flag != "" {
		return flag
	}
	if v := getenv(queueEnv); v != "" {
		return v
	}
	return def
}

// listAuth is the auth for listing a URL's branches: the token only where
// it may go (over HTTPS to the configured GitHub hosts).
func listAuth(source string, cfg *config.Config, token string) transport.AuthMethod {
	return acquire.Credentials{Token: token, Hosts: cfg.GitHub.TokenHosts()}.AuthFor(source)
}

// repoJobs turns batch entries into queue jobs: each with the base commit
// it would migrate (listed now, so a rerun after new commits is a new job)
// and its effective options.
func repoJobs(ctx context.Context, entries []batch.Entry, bopts batch.Options, cfg *config.Config, list, rerun string) []queue.RepoArgs {
	jobs := make([]queue.RepoArgs, len(entries))
	fp := jobFingerprint(bopts)
	p := pool.New().WithMaxGoroutines(8)
	for i, e := range entries {
		push, pr := bopts.Push, bopts.PR
		if e.Push != nil {
			push = *e.Push
		}
		if e.PR != nil {
			pr = *e.PR
		}
		p.Go(func() {
			// An unreachable repository gets no base: its job fails at the
			// clone and says why there.
			lctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			base, _ := queue.ResolveBase(lctx, e.Source, e.Branch, listAuth(e.Source, cfg, bopts.Token))
			jobs[i] = queue.RepoArgs{Source: e.Source, Branch: e.Branch, BaseCommit: base, Target: e.Target, Push: push || pr, PR: pr,
				Fingerprint: fp, Rerun: rerun, ID: e.ID, List: list, Timeout: e.Timeout}
		})
	}
	p.Wait()
	return jobs
}

// listTimeout bounds listing one repository's branches at submission.
const listTimeout = 30 * time.Second

// jobFingerprint names what a job's outcome depends on besides its
// repository, base commit and list options: the pallasify version, the
// operator config's bytes and the kernel-stage flags.
func jobFingerprint(bopts batch.Options) string {
	var cfgBytes []byte
	if bopts.ConfigPath != "" {
		cfgBytes, _ = os.ReadFile(bopts.ConfigPath)
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("version=%s\nconfig=%x\nstages=%s\n", version, sha256.Sum256(cfgBytes), bopts.Fingerprint)))
	return hex.EncodeToString(sum[:8])
}

// teeProgress reports stages to several Progress displays.
type teeProgress []batch.Progress

func (t teeProgress) Start(id string) batch.Tracker {
	var ts teeTracker
	for _, p := range t {
		ts = append(ts, p.Start(id))
	}
	return ts
}

func (t teeProgress) Wait() {
	for _, p := range t {
		p.Wait()
	}
}

type teeTracker []batch.Tracker

func (t teeTracker) Stage(name string) {
	for _, x := range t {
		x.Stage(name)
	}
}

func (t teeTracker) Finish(state string) {
	for _, x := range t {
		x.Finish(state)
	}
}

// queuedRun is one batch submitted to a queue and, unless enqueueOnly,
// worked by this process until every job finished.
type queuedRun struct {
	URL         string
	EnqueueOnly bool
	RetryFailed bool
	Rerun       string
	RescueAfter time.Duration
}

// runQueued submits entries and waits for them, working them with
// bopts.Concurrency in-process workers; the summary comes from the jobs'
// recorded progress.
func runQueued(ctx context.Context, o *batchOptions, qr queuedRun, entries []batch.Entry, bopts batch.Options, cfg *config.Config) (*batch.Summary, error) {
	list := strings.TrimSuffix(filepath.Base(o.List), filepath.Ext(o.List))
	jobs := repoJobs(ctx, entries, bopts, cfg, list, qr.Rerun)
	if err := ctx.Err(); err != nil {
		return nil, err // interrupted before anything was submitted
	}
	qcfg := queue.Config{URL: qr.URL, PollInterval: 100 * time.Millisecond}
	var rn *batch.Runner
	if !qr.EnqueueOnly {
		w := queue.NewRepoWorker()
		if bopts.Progress != nil {
			bopts.Progress = teeProgress{bopts.Progress, w.Tracker()}
		} else {
			bopts.Progress = w.Tracker()
		}
		var err error
		if rn, err = batch.NewRunner(bopts); err != nil {
			return nil, err
		}
		defer rn.Close()
		w.Runner = rn
		qcfg.Repos, qcfg.RepoWorkers = w, rn.Options().Concurrency
		qcfg.JobTimeout = rn.Options().Timeout + queue.DefaultGrace
		qcfg.RescueAfter = qr.RescueAfter
		if qcfg.RescueAfter <= 0 {
			qcfg.RescueAfter = rn.Options().Timeout + 5*time.Minute
		}
		if qcfg.RescueAfter <= qcfg.JobTimeout {
			return nil, fmt.Errorf("--rescue-after (%s) must exceed the per-repository timeout plus %s (%s)",
				qcfg.RescueAfter, queue.DefaultGrace, qcfg.JobTimeout)
		}
	}
	q, err := queue.Open(ctx, qcfg)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	enq, err := q.Submit(ctx, jobs, queue.SubmitOptions{RetryFailed: qr.RetryFailed})
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(enq))
	skipped := map[int64]bool{}
	for i, e := range enq {
		ids[i] = e.Job.ID
		skipped[e.Job.ID] = e.Duplicate && !e.Retried && queue.Finalized(e.Job.State)
	}
	sum := &batch.Summary{RunDir: bopts.RunDir}
	if qr.EnqueueOnly {
		for _, e := range enq {
			note := "queued"
			if e.Duplicate {
				note = "already queued (" + string(e.Job.State) + ")"
			}
			fmt.Fprintf(o.IO.ErrOut, "pallasify: job %d %s: %s\n", e.Job.ID, e.Args.Source, note)
		}
		return nil, nil
	}
	if err := q.Start(ctx); err != nil {
		return nil, err
	}
	rows, werr := q.Wait(ctx, ids, 100*time.Millisecond)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// Ctrl-C: running jobs are cancelled, record themselves interrupted and
	// run again on the next invocation.
	q.Stop(stopCtx, werr != nil)
	for i, e := range enq {
		st, err := jobStatus(stopCtx, q, e, rows[ids[i]])
		if err != nil {
			return nil, err
		}
		st.Skipped = skipped[e.Job.ID]
		sum.Repos = append(sum.Repos, st)
	}
	countSummary(sum)
	if err := writeSummary(sum, bopts); err != nil {
		return sum, err
	}
	return sum, nil
}

// jobStatus is a job's batch status: the one its worker recorded, else one
// derived from the queue's state.
func jobStatus(ctx context.Context, q *queue.Queue, e queue.Enqueued, row *rivertype.JobRow) (batch.Status, error) {
	if row == nil {
		row = e.Job
	}
	if r, err := q.Job(ctx, row.ID); err == nil {
		row = r
	}
	p, err := q.Progress(ctx, row.ID)
	if err != nil {
		return batch.Status{}, err
	}
	if p != nil && p.Status != nil && p.Stage != queue.StageStarted {
		st := *p.Status
		if !queue.Finalized(row.State) && st.State == batch.StateDone {
			st.State = batch.StateRunning
		}
		return st, nil
	}
	st := batch.Status{ID: e.Args.ID, Source: e.Args.Source, State: batch.StatePending, Attempts: row.Attempt}
	switch row.State {
	case rivertype.JobStateRunning:
		st.State = batch.StateRunning
	case rivertype.JobStateRetryable:
		st.State = batch.StateInterrupted
	case rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		st.State = batch.StateFailed
	case rivertype.JobStateCompleted:
		st.State = batch.StateDone
	}
	if n := len(row.Errors); n > 0 {
		st.Error = row.Errors[n-1].Error
	}
	return st, nil
}

func countSummary(sum *batch.Summary) {
	for _, s := range sum.Repos {
		if s.Skipped {
			sum.Skipped++
		} else {
			sum.Ran++
		}
		switch s.State {
		case batch.StateDone:
			sum.Done++
		case batch.StateFailed:
			sum.Failed++
		default:
			sum.Interrupted++
		}
	}
}

// writeSummary writes summary.json and summary.md into the run directory.
func writeSummary(sum *batch.Summary, bopts batch.Options) error {
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	var md strings.Builder
	batch.WriteMarkdown(&md, sum)
	for name, data := range map[string]string{"summary.json": string(js), "summary.md": md.String()} {
		if err := safefs.WriteBytes(filepath.Join(bopts.RunDir, name), []byte(bopts.Secrets.String(data)), 0o644); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
	}
	return nil
}
