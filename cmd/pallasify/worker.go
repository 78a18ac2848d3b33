package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/queue"
	"github.com/pallasify/pallasify/pipeline/redact"
)

// workerOptions are the worker command's flags.
type workerOptions struct {
	IO          *streams
	Queue       string
	Config      string
	RunDir      string
	Jobs        int
	Timeout     time.Duration
	RescueAfter time.Duration
	Poll        time.Duration
	Keep        bool
	// Migrate overrides the pipeline (tests).
	Migrate batch.Migrator
	Getenv  func(string) string
	// Ready, when set, is called once the worker runs (tests).
	Ready func()
}

func newWorkerCmd(io *streams) *cobra.Command {
	opts := &workerOptions{IO: io, Getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run repository jobs from the queue (batch jobs submitted by any machine)",
		Long: `Run batch repository jobs from a durable queue until interrupted.

The queue is --queue, else $PALLASIFY_QUEUE, else the SQLite file
$XDG_STATE_HOME/pallasify/queue.db (~/.local/state/pallasify/queue.db). Point
any number of workers, on any number of machines, at one PostgreSQL database
(--queue postgres://USER@HOST/DB) and submit with 'pallasify batch FILE
--queue ... --enqueue-only': each job runs once. A worker killed mid-job
(even with kill -9) leaves its job running; after --rescue-after another
worker retries it from its recorded progress, without a second push or pull
request. SIGINT or SIGTERM stops the worker; its running jobs are recorded
interrupted and retried.

Each worker uses its own --config (operator config: GitHub credentials,
batch settings) and $GITHUB_TOKEN, and writes each repository's artifacts
under --run-dir. Logs are JSON lines on stderr.`,
		Example: `  pallasify worker --queue postgres://pallasify@db.internal/pallasify --config ops.yaml -j 4
  PALLASIFY_QUEUE=postgres://pallasify@db.internal/pallasify pallasify worker`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return workerRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Queue, "queue", "", "job queue: PostgreSQL URL or SQLite file (default: $"+queueEnv+", else the SQLite queue in the state directory)")
	fl.StringVar(&opts.Config, "config", "", "operator config `FILE`")
	fl.StringVar(&opts.RunDir, "run-dir", ".pallasify-worker", "where each repository's status, diff and report go")
	fl.IntVarP(&opts.Jobs, "jobs", "j", 0, "jobs at once (default: batch.concurrency, 4)")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "time limit per repository (default: batch.timeout, 30m)")
	fl.DurationVar(&opts.RescueAfter, "rescue-after", 0, "retry a job whose worker died after this long (default: --timeout + 5m; must exceed --timeout + 10s)")
	fl.DurationVar(&opts.Poll, "poll", 0, "how often to look for jobs when no notification arrives (default 1s)")
	fl.BoolVar(&opts.Keep, "keep", false, "keep the clones under the run directory")
	return cmd
}

func workerRun(ctx context.Context, o *workerOptions) error {
	if o.Jobs < 0 || o.Timeout < 0 || o.RescueAfter < 0 {
		return usageErr(errors.New("--jobs, --timeout and --rescue-after must be positive"))
	}
	cfg, probs, err := config.Load("", true, o.Config)
	for _, p := range probs {
		fmt.Fprintln(o.IO.ErrOut, p.String())
	}
	if err != nil {
		return usageErr(err)
	}
	secrets := &redact.Secrets{}
	token, client, err := githubAuth(ctx, cfg, o.Getenv, true)
	if err != nil {
		return usageErr(errors.New(secrets.String(err.Error())))
	}
	secrets.Add(token)
	w := queue.NewRepoWorker()
	bopts := batch.Options{RunDir: o.RunDir, ConfigPath: o.Config, Migrate: o.Migrate, Concurrency: o.Jobs, Timeout: o.Timeout,
		Token: token, TokenHosts: cfg.GitHub.TokenHosts(), Keep: o.Keep, Version: version, Secrets: secrets, Log: o.IO.ErrOut, Progress: w.Tracker()}
	if client != nil {
		bopts.GitHub = client
	}
	rn, err := batch.NewRunner(bopts)
	if err != nil {
		return usageErr(err)
	}
	defer rn.Close()
	w.Runner = rn
	ro := rn.Options()
	rescue := o.RescueAfter
	if rescue == 0 {
		rescue = ro.Timeout + 5*time.Minute
	}
	jobTimeout := ro.Timeout + queue.DefaultGrace
	if rescue <= jobTimeout {
		return usageErr(fmt.Errorf("--rescue-after (%s) must exceed the per-repository timeout plus %s (%s), or live jobs would run twice",
			rescue, queue.DefaultGrace, jobTimeout))
	}
	q, err := queue.Open(ctx, queue.Config{URL: queueURL(o.Queue, o.Getenv, queue.DefaultURL()), RepoWorkers: ro.Concurrency,
		Repos: w, JobTimeout: jobTimeout, RescueAfter: rescue, PollInterval: o.Poll, Logger: secrets.JSONLogger(o.IO.ErrOut, nil)})
	if err != nil {
		return usageErr(errors.New(secrets.String(err.Error())))
	}
	defer q.Close()
	if err := q.Start(ctx); err != nil {
		return usageErr(err)
	}
	log := rn.Logger()
	log.Info("worker started", "queue", q.String(), "worker", queue.WorkerName(), "jobs", ro.Concurrency,
		"timeout", ro.Timeout.String(), "rescue_after", rescue.String())
	if o.Ready != nil {
		o.Ready()
	}
	<-ctx.Done()
	log.Info("worker stopping: running jobs are recorded interrupted and retried")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.Stop(sctx, true); err != nil {
		log.Warn("stop", "err", err)
	}
	return nil
}

// batchStatusOptions are the batch status command's flags.
type batchStatusOptions struct {
	IO     *streams
	Queue  string
	RunDir string
	Format string
	JSON   bool // deprecated --json
	Getenv func(string) string
}

func newBatchStatusCmd(io *streams) *cobra.Command {
	opts := &batchStatusOptions{IO: io, Getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "status [FILE]",
		Short: "Show the queue's batch jobs (state, attempts, stage, pushed commit, pull request)",
		Long: `List the repository jobs in the queue: state, attempts, the stage the last
attempt recorded, the worker, the pushed commit and the pull request.

With FILE, only that list's jobs, from the queue 'pallasify batch FILE' used
(its run directory's SQLite file unless --queue or $PALLASIFY_QUEUE names
another). Without FILE, every job of --queue (default: $PALLASIFY_QUEUE, else
the worker's default SQLite queue).`,
		Example: `  pallasify batch status repos.txt
  pallasify batch status --queue postgres://pallasify@db.internal/pallasify --format json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list := ""
			if len(args) == 1 {
				list = args[0]
			}
			return batchStatusRun(cmd.Context(), opts, list)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Queue, "queue", "", "job queue: PostgreSQL URL or SQLite file")
	fl.StringVar(&opts.RunDir, "run-dir", "", "the batch's run directory (default .pallasify-batch/<list name>)")
	bindFormat(fl, &opts.Format, &opts.JSON, "output", textJSON...)
	return cmd
}

func batchStatusRun(ctx context.Context, o *batchStatusOptions, listFile string) error {
	format, err := resolveFormat(o.IO.ErrOut, o.Format, o.JSON, textJSON...)
	if err != nil {
		return err
	}
	def, name := queue.DefaultURL(), ""
	if listFile != "" {
		name = strings.TrimSuffix(filepath.Base(listFile), filepath.Ext(listFile))
		runDir := o.RunDir
		if runDir == "" {
			runDir = filepath.Join(".pallasify-batch", name)
		}
		def = filepath.Join(runDir, "queue.db")
	} else if o.RunDir != "" {
		def = filepath.Join(o.RunDir, "queue.db")
	}
	url := queueURL(o.Queue, o.Getenv, def)
	if !queue.IsPostgres(url) {
		if _, err := os.Stat(strings.TrimPrefix(strings.TrimPrefix(url, "sqlite://"), "sqlite:")); err != nil {
			return usageErr(fmt.Errorf("no queue at %s (run pallasify batch first, or name one with --queue)", url))
		}
	}
	q, err := queue.Open(ctx, queue.Config{URL: url})
	if err != nil {
		return usageErr(err)
	}
	defer q.Close()
	jobs, err := q.RepoJobs(ctx, name)
	if err != nil {
		return usageErr(err)
	}
	if format == "json" {
		// An array, as before JSON documents were versioned: no schema_version.
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		if jobs == nil {
			jobs = []queue.JobView{}
		}
		return enc.Encode(jobs)
	}
	fmt.Fprintf(o.IO.Out, "Queue: %s\n", q)
	queue.WriteTable(o.IO.Out, jobs)
	return nil
}
