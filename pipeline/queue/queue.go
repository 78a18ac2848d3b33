// Package queue runs batch and bot jobs on River (github.com/riverqueue/river),
// a durable job queue: SQLite (riversqlite over modernc.org/sqlite, pure Go)
// is the embedded default on one machine, PostgreSQL (riverpgxv5) lets any
// number of `pallasify worker` processes on any number of machines share one
// queue. A repository job is unique per (repository, branch, base commit,
// options), so reruns and double submissions neither duplicate work nor pull
// requests. A worker killed mid-job leaves its job running; River's rescuer
// retries it after RescueAfter on another worker, and the retry resumes from
// the progress the job recorded (pallasify_job_progress: stage, pushed
// commit, pull request): a job recorded done is completed without work, and
// one killed during delivery is delivered again, which pushes nothing when
// the remote branch already holds the change and finds the existing pull
// request instead of opening a second one.
package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// River queue names: batch repositories and bot webhook jobs.
const (
	QueueRepos = "repos"
	QueueBot   = "bot"
)

// Backends.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Config opens a queue. Without workers the queue only enqueues and lists.
type Config struct {
	// URL is postgres://… / postgresql://… for PostgreSQL; anything else is a
	// SQLite file path (an optional sqlite: or sqlite:// prefix is dropped).
	URL string
	// RepoWorkers and BotWorkers are how many jobs of each queue this
	// process runs at once (0: none; Repos and Bot must be set accordingly).
	RepoWorkers, BotWorkers int
	// Repos runs repository jobs (needed with RepoWorkers).
	Repos *RepoWorker
	// Bot runs bot jobs (needed with BotWorkers).
	Bot *BotWorker
	// JobTimeout is River's limit for jobs whose worker names none (the
	// runners' own limits come first; this is the backstop). Default 1h.
	JobTimeout time.Duration
	// RescueAfter is how long a job may stay running before River considers
	// its worker dead and retries it elsewhere (default JobTimeout + 1h). It
	// must exceed every job's timeout: River rescues a job only once its
	// timeout has passed too, and a live job older than this would run twice.
	RescueAfter time.Duration
	// PollInterval is how often workers look for jobs when no notification
	// arrives (SQLite always polls; default 1s).
	PollInterval time.Duration
	// Logger receives River's own warnings (default: discard).
	Logger *slog.Logger
}

// Queue is an open queue.
type Queue struct {
	backend string
	url     string
	eng     engine
	db      *sql.DB // progress records, on the same database
	closers []func()
	started bool
}

// engine is the River client whatever its transaction type.
type engine interface {
	insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	get(ctx context.Context, id int64) (*rivertype.JobRow, error)
	list(ctx context.Context, p *river.JobListParams) (*river.JobListResult, error)
	retry(ctx context.Context, id int64) (*rivertype.JobRow, error)
	start(ctx context.Context) error
	stopAndCancel(ctx context.Context) error
	stop(ctx context.Context) error
}

type clientEngine[TTx any] struct{ c *river.Client[TTx] }

func (e clientEngine[TTx]) insert(ctx context.Context, a river.JobArgs, o *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return e.c.Insert(ctx, a, o)
}
func (e clientEngine[TTx]) get(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	return e.c.JobGet(ctx, id)
}
func (e clientEngine[TTx]) list(ctx context.Context, p *river.JobListParams) (*river.JobListResult, error) {
	return e.c.JobList(ctx, p)
}
func (e clientEngine[TTx]) retry(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	return e.c.JobRetry(ctx, id)
}
func (e clientEngine[TTx]) start(ctx context.Context) error         { return e.c.Start(ctx) }
func (e clientEngine[TTx]) stop(ctx context.Context) error          { return e.c.Stop(ctx) }
func (e clientEngine[TTx]) stopAndCancel(ctx context.Context) error { return e.c.StopAndCancel(ctx) }

// IsPostgres reports whether url names a PostgreSQL database.
func IsPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// DefaultURL is the SQLite queue used when none is configured:
// $XDG_STATE_HOME/pallasify/queue.db (~/.local/state/pallasify/queue.db).
func DefaultURL() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "pallasify", "queue.db")
}

// Open connects to the queue, migrates River's schema and the progress table
// (under a lock, so workers may start together) and builds the client.
func Open(ctx context.Context, cfg Config) (*Queue, error) {
	if cfg.URL == "" {
		cfg.URL = DefaultURL()
	}
	if cfg.RepoWorkers > 0 && cfg.Repos == nil || cfg.BotWorkers > 0 && cfg.Bot == nil {
		return nil, errors.New("queue: workers configured without a job runner")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if IsPostgres(cfg.URL) {
		return openPostgres(ctx, cfg)
	}
	return openSQLite(ctx, cfg)
}

// riverConfig is the client configuration shared by both backends.
func riverConfig(cfg Config) *river.Config {
	rc := &river.Config{
		Logger:               cfg.Logger,
		JobTimeout:           cfg.JobTimeout,
		RescueStuckJobsAfter: cfg.RescueAfter,
		MaxAttempts:          10,
		FetchPollInterval:    cfg.PollInterval,
		// Jobs that finished stay visible to `batch status` and keep
		// uniqueness (a rerun skips them) for a month.
		CompletedJobRetentionPeriod: 30 * 24 * time.Hour,
		CancelledJobRetentionPeriod: 30 * 24 * time.Hour,
		DiscardedJobRetentionPeriod: 30 * 24 * time.Hour,
	}
	if rc.JobTimeout <= 0 {
		rc.JobTimeout = time.Hour
	}
	if rc.RescueStuckJobsAfter <= 0 {
		rc.RescueStuckJobsAfter = rc.JobTimeout + time.Hour
	}
	if rc.FetchPollInterval <= 0 {
		rc.FetchPollInterval = time.Second
	}
	if rc.FetchPollInterval < river.FetchCooldownDefault {
		rc.FetchCooldown = rc.FetchPollInterval
	}
	// Every client knows both kinds (an idle one has runners that refuse),
	// so whichever becomes leader can rescue stuck jobs of either queue.
	repos, bots := cfg.Repos, cfg.Bot
	if repos == nil {
		repos = &RepoWorker{}
	}
	if bots == nil {
		bots = &BotWorker{}
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.Worker[RepoArgs](repos))
	river.AddWorker(workers, river.Worker[BotArgs](bots))
	rc.Workers = workers
	queues := map[string]river.QueueConfig{}
	if cfg.RepoWorkers > 0 {
		queues[QueueRepos] = river.QueueConfig{MaxWorkers: cfg.RepoWorkers}
	}
	if cfg.BotWorkers > 0 {
		queues[QueueBot] = river.QueueConfig{MaxWorkers: cfg.BotWorkers}
	}
	if len(queues) > 0 {
		rc.Queues = queues
	}
	return rc
}

type pgxTx = pgx.Tx

// advisoryLock serialises schema migrations of concurrently starting workers.
const advisoryLock = 0x70616c6c // "pall"

// connectTimeout bounds each connection attempt to PostgreSQL when the URL
// names no connect_timeout: a server that accepts and never answers must
// not hang a worker, batch or bot at start-up. A variable for the tests.
var connectTimeout = 30 * time.Second

func openPostgres(ctx context.Context, cfg Config) (*Queue, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = connectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	q := &Queue{backend: Postgres, url: redactURL(cfg.URL), closers: []func(){pool.Close}}
	pingCtx, cancel := context.WithTimeout(ctx, 2*pc.ConnConfig.ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		q.Close()
		return nil, fmt.Errorf("queue: connect to %s: %w", q.url, err)
	}
	driver := riverpgxv5.New(pool)
	if err := migratePostgres(ctx, pool, driver); err != nil {
		q.Close()
		return nil, err
	}
	q.db = stdlib.OpenDBFromPool(pool)
	q.closers = append([]func(){func() { q.db.Close() }}, q.closers...)
	c, err := river.NewClient(driver, riverConfig(cfg))
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("queue: %w", err)
	}
	q.eng = clientEngine[pgxTx]{c}
	q.bind(cfg)
	return q, nil
}

// migratePostgres brings River's schema and the progress table up to date
// while holding a session advisory lock, so workers starting together
// migrate one after the other (River's migrations run outside one
// transaction: some cannot share one).
func migratePostgres(ctx context.Context, pool *pgxpool.Pool, driver *riverpgxv5.Driver) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", advisoryLock); err != nil {
		return fmt.Errorf("queue: migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", advisoryLock)
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("queue: migrate: %w", err)
	}
	if _, err := conn.Exec(ctx, progressSchema); err != nil {
		return fmt.Errorf("queue: progress table: %w", err)
	}
	return nil
}

func openSQLite(ctx context.Context, cfg Config) (*Queue, error) {
	path := strings.TrimPrefix(strings.TrimPrefix(cfg.URL, "sqlite://"), "sqlite:")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	// WAL lets status readers work beside a writer; IMMEDIATE transactions
	// and a busy timeout make processes on one machine wait for each other
	// instead of failing with SQLITE_BUSY.
	dsn := "file:" + path + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	db.SetMaxOpenConns(1) // riversqlite's advice: one connection, or SQLITE_BUSY
	q := &Queue{backend: SQLite, url: path, db: db, closers: []func(){func() { db.Close() }}}
	driver := riversqlite.New(db)
	tx, err := db.BeginTx(ctx, nil) // IMMEDIATE: the write lock serialises migrations
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("queue: open %s: %w", path, err)
	}
	if err := migrateSQLite(ctx, tx, driver); err != nil {
		tx.Rollback()
		q.Close()
		return nil, fmt.Errorf("queue: %s: %w", path, err)
	}
	c, err := river.NewClient(driver, riverConfig(cfg))
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("queue: %w", err)
	}
	q.eng = clientEngine[*sql.Tx]{c}
	q.bind(cfg)
	return q, nil
}

// migrateSQLite migrates inside one IMMEDIATE transaction: its write lock
// makes processes on the machine migrate one after the other.
func migrateSQLite(ctx context.Context, tx *sql.Tx, driver *riversqlite.Driver) error {
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return err
	}
	//lint:ignore SA1019 SQLite's migrations run in one transaction; it serialises processes.
	if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := tx.ExecContext(ctx, progressSchema); err != nil {
		return fmt.Errorf("progress table: %w", err)
	}
	return tx.Commit()
}

// bind gives the job runners access to the queue's progress records.
func (q *Queue) bind(cfg Config) {
	if cfg.Repos != nil {
		cfg.Repos.q = q
	}
	if cfg.Bot != nil {
		cfg.Bot.q = q
	}
}

// Backend is SQLite or Postgres.
func (q *Queue) Backend() string { return q.backend }

// String names the queue (a Postgres URL without its password).
func (q *Queue) String() string { return q.backend + " " + q.url }

// Start runs the workers until Stop (or ctx ends: then running jobs finish).
func (q *Queue) Start(ctx context.Context) error {
	if err := q.eng.start(ctx); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	q.started = true
	return nil
}

// Stop stops fetching; with cancel, running jobs' contexts are cancelled
// (they record themselves interrupted and are retried), otherwise they are
// waited for until ctx ends.
func (q *Queue) Stop(ctx context.Context, cancel bool) error {
	if !q.started {
		return nil
	}
	q.started = false
	if cancel {
		return q.eng.stopAndCancel(ctx)
	}
	return q.eng.stop(ctx)
}

// Close stops the client (cancelling running jobs) and closes the database.
func (q *Queue) Close() {
	if q.started {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		q.Stop(ctx, true)
		cancel()
	}
	for _, c := range q.closers {
		c()
	}
	q.closers = nil
}

// redactURL drops the password of a database URL.
func redactURL(raw string) string {
	at := strings.LastIndex(raw, "@")
	scheme := strings.Index(raw, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return raw
	}
	userinfo := raw[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return raw[:scheme+3] + user + ":xxxxx" + raw[at:]
	}
	return raw
}
