package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/redact"
)

// batchOptions are the batch command's flags.
type batchOptions struct {
	IO          *streams
	List        string
	RunDir      string
	Config      string
	Jobs        int
	Timeout     time.Duration
	Push, PR    bool
	RetryFailed bool
	// Force runs every repository again, finished or not.
	Force  bool
	Keep   bool
	Format string
	JSON   bool // deprecated --json
	// Queue is the job queue (default: SQLite in the run directory);
	// EnqueueOnly submits without working; RescueAfter is when a job whose
	// worker died is retried.
	Queue       string
	EnqueueOnly bool
	RescueAfter time.Duration
	// Stages are the kernel stages' flags (as migrate's).
	Stages stageFlags
	// Migrate overrides the pipeline (tests).
	Migrate batch.Migrator
	Getenv  func(string) string
}

func newBatchCmd(io *streams) *cobra.Command {
	opts := &batchOptions{IO: io, Getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "batch FILE",
		Short: "Migrate many repositories listed in FILE (resumable, continue-on-error)",
		Long: `Run pallasify over every repository listed in FILE: one git URL or local path
per line, optionally followed by key=value options (branch=, target=, push=,
pr=, timeout=). Blank lines and # comments are ignored.

Repositories run concurrently (-j), each with a timeout; a failure never
stops the others. The run directory (--run-dir, default .pallasify-batch/<list
name>) keeps each repository's status, diff and report. Running the same
command again resumes: finished repositories are skipped, repositories that
were interrupted run again, and failed ones are retried with --retry-failed.
A summary table is printed and written as summary.md and summary.json.

Every repository is a job in a durable queue (River): by default a SQLite
file in the run directory, worked by this process. With --queue pointing at
a PostgreSQL database, any number of 'pallasify worker' processes on any
number of machines share the jobs (--enqueue-only submits and exits). A job
is unique per repository, base commit and options: submitting the same list
twice, or again after it ran, queues nothing new; new commits or changed
options make a new job. 'pallasify batch status' lists the queue's jobs.

Clones and pushes use the token in $GITHUB_TOKEN (or the variable named by
github.token_env in --config). Exit 1 when any repository failed.`,
		Example: `  pallasify batch repos.txt -j 8
  pallasify batch repos.txt --push --pr --config ops.yaml
  pallasify batch repos.txt --retry-failed
  pallasify batch repos.txt --pr --queue postgres://pallasify@db/pallasify --enqueue-only
  pallasify batch status --queue postgres://pallasify@db/pallasify`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr(fmt.Errorf("batch takes exactly one FILE (got %d)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.List = args[0]
			return batchRun(cmd.Context(), opts)
		},
	}
	opts.Stages.bind(cmd)
	fl := cmd.Flags()
	fl.StringVar(&opts.RunDir, "run-dir", "", "run directory (default .pallasify-batch/<list name>)")
	fl.StringVar(&opts.Config, "config", "", "operator config `FILE` (merged over each repository's pallasify.yaml)")
	fl.IntVarP(&opts.Jobs, "jobs", "j", 0, "repositories at once (default: batch.concurrency, 4)")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "time limit per repository (default: batch.timeout, 30m)")
	fl.BoolVar(&opts.Push, "push", false, "push a pallasify branch to each repository")
	fl.BoolVar(&opts.PR, "pr", false, "open or update a pull request in each repository (implies --push)")
	fl.BoolVar(&opts.RetryFailed, "retry-failed", false, "run repositories that failed before again")
	fl.BoolVar(&opts.Force, "force", false, "run every repository again, even those finished on the same commit with the same options")
	fl.BoolVar(&opts.Keep, "keep", false, "keep the clones under the run directory")
	bindFormat(fl, &opts.Format, &opts.JSON, "summary (text: a Markdown table)", textJSON...)
	fl.StringVar(&opts.Queue, "queue", "", "job queue: a PostgreSQL URL shared by workers on many machines, or a SQLite file (default: $"+queueEnv+", else <run-dir>/queue.db)")
	fl.BoolVar(&opts.EnqueueOnly, "enqueue-only", false, "submit the jobs to --queue and exit; `pallasify worker` processes run them")
	fl.DurationVar(&opts.RescueAfter, "rescue-after", 0, "retry a job whose worker died after this long (default: --timeout + 5m)")
	cmd.AddCommand(newBatchStatusCmd(io))
	return cmd
}

func batchRun(ctx context.Context, o *batchOptions) error {
	if o.Jobs < 0 || o.Timeout < 0 {
		return usageErr(errors.New("--jobs and --timeout must be positive"))
	}
	format, err := resolveFormat(o.IO.ErrOut, o.Format, o.JSON, textJSON...)
	if err != nil {
		return err
	}
	f, err := os.Open(o.List)
	if err != nil {
		return usageErr(err)
	}
	entries, dups, err := batch.ParseList(f, filepath.Base(o.List))
	f.Close()
	if err != nil {
		return usageErr(err)
	}
	for _, p := range dups {
		fmt.Fprintln(o.IO.ErrOut, p.String())
	}
	cfg, probs, err := config.Load("", true, o.Config)
	for _, p := range probs {
		fmt.Fprintln(o.IO.ErrOut, p.String())
	}
	if err != nil {
		return usageErr(err)
	}
	if o.RunDir == "" {
		name := strings.TrimSuffix(filepath.Base(o.List), filepath.Ext(o.List))
		o.RunDir = filepath.Join(".pallasify-batch", name)
	}
	secrets := &redact.Secrets{}
	token, client, err := githubAuth(ctx, cfg, o.Getenv, o.PR)
	if err != nil {
		return usageErr(errors.New(secrets.String(err.Error())))
	}
	secrets.Add(token)
	bopts := batch.Options{RunDir: o.RunDir, ConfigPath: o.Config, Migrate: o.Stages.migrator(o.Migrate, o.Getenv), Push: o.Push || o.PR, PR: o.PR,
		RetryFailed: o.RetryFailed, Concurrency: o.Jobs, Timeout: o.Timeout, Token: token, TokenHosts: cfg.GitHub.TokenHosts(), Keep: o.Keep,
		Version: version, Secrets: secrets, Force: o.Force, Fingerprint: o.Stages.fingerprint()}
	if o.PR {
		if client == nil {
			return usageErr(fmt.Errorf("--pr needs a token in $%s (or GitHub App settings in --config)", cfg.GitHub.TokenEnv))
		}
		bopts.GitHub = client
	}
	var bars *batch.Bars
	if isTerminal(o.IO.ErrOut) {
		bars = batch.NewBars(o.IO.ErrOut)
		bopts.Progress = bars
	} else {
		bopts.Log = o.IO.ErrOut // JSON progress lines
	}
	qr := queuedRun{URL: queueURL(o.Queue, o.Getenv, filepath.Join(o.RunDir, "queue.db")), EnqueueOnly: o.EnqueueOnly,
		RetryFailed: o.RetryFailed, RescueAfter: o.RescueAfter}
	if o.Force {
		qr.Rerun = time.Now().UTC().Format(time.RFC3339Nano) // a new value: new jobs
	}
	sum, err := runQueued(ctx, o, qr, entries, bopts, cfg)
	if bars != nil {
		bars.Wait()
	}
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: 130, err: errors.New("interrupted before the jobs were submitted: run the same command again")}
		}
		return usageErr(errors.New(secrets.String(err.Error())))
	}
	if sum == nil { // --enqueue-only
		return nil
	}
	out := secrets.Writer(o.IO.Out)
	if format == "json" {
		if err := writeJSON(out, schemaBatch, sum); err != nil {
			return usageErr(err)
		}
	} else {
		batch.WriteMarkdown(out, sum)
		fmt.Fprintf(out, "\nRun directory: %s\n", sum.RunDir)
	}
	if ctx.Err() != nil {
		return &exitError{code: 130, err: errors.New("interrupted: finished repositories are recorded; run the same command again to resume")}
	}
	if sum.Failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d repositories failed (re-run with --retry-failed)", sum.Failed, len(sum.Repos))}
	}
	if sum.Interrupted > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d repositories did not finish; run the same command again to resume", sum.Interrupted)}
	}
	return nil
}
