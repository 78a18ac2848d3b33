package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/bot"
	"github.com/pallasify/pallasify/pipeline/deliver"
)

// WorkerName identifies this process in progress records (host:pid).
func WorkerName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// RepoWorker runs repository jobs with a batch.Runner (the same
// per-repository run as `pallasify batch`).
type RepoWorker struct {
	river.WorkerDefaults[RepoArgs]
	// Runner runs one repository. Build it with Options.Progress set to
	// Tracker(), so stages are recorded.
	Runner *batch.Runner
	// Log receives the worker's own lines (default: the runner's logger).
	Log *slog.Logger
	// Grace is added to a repository's time limit for River's job timeout:
	// the runner stops the repository itself; River's limit is the backstop
	// and tells its rescuer when a job can only be running on a dead worker.
	Grace time.Duration

	q    *Queue
	name string
	mu   sync.Mutex
	jobs map[string]*runningJob // entry id → job being run
}

type runningJob struct {
	id      int64
	attempt int
}

// NewRepoWorker returns a worker; set Runner before starting the queue.
func NewRepoWorker() *RepoWorker {
	return &RepoWorker{name: WorkerName(), jobs: map[string]*runningJob{}}
}

// Tracker records the runner's stages (clone, migrate, deliver) as job
// progress; pass it as batch.Options.Progress.
func (w *RepoWorker) Tracker() batch.Progress { return stageTracker{w} }

type stageTracker struct{ w *RepoWorker }

func (t stageTracker) Start(id string) batch.Tracker { return jobTracker{t.w, id} }
func (t stageTracker) Wait()                         {}

type jobTracker struct {
	w  *RepoWorker
	id string
}

func (t jobTracker) Stage(name string) {
	t.w.mu.Lock()
	j := t.w.jobs[t.id]
	t.w.mu.Unlock()
	if j == nil || t.w.q == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.w.q.recordStage(ctx, j.id, name, j.attempt, t.w.name); err != nil {
		t.w.logger().Warn("record stage", "err", err)
	}
}

func (t jobTracker) Finish(string) {}

func (w *RepoWorker) logger() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	if w.Runner != nil {
		return w.Runner.Logger()
	}
	return slog.New(slog.DiscardHandler)
}

// Work implements river.Worker. A job whose progress says done completes
// without running again; otherwise the repository runs (again), which
// delivery makes safe: an unchanged branch is not pushed twice and an open
// pull request is found, not duplicated. A repository that fails is
// cancelled (recorded failed; `batch --retry-failed` runs it again); one that
// was interrupted is retried.
func (w *RepoWorker) Work(ctx context.Context, job *river.Job[RepoArgs]) error {
	if w.Runner == nil || w.q == nil {
		return errors.New("queue: this client runs no repository jobs")
	}
	a := job.Args
	log := w.logger().With("job", job.ID, "attempt", job.Attempt, "repo", a.Source, "worker", w.name)
	prev, err := w.q.Progress(ctx, job.ID)
	if err != nil {
		return err
	}
	if prev != nil && prev.Stage == StageDone && prev.Status != nil {
		log.Info("job resumed: recorded done", "pushed_commit", prev.PushedCommit, "pr", prev.PR)
		return nil
	}
	if prev != nil {
		log.Info("job resumed", "recorded_stage", prev.Stage, "recorded_by", prev.Worker)
	}
	if err := w.q.record(ctx, Progress{JobID: job.ID, Stage: StageStarted, Attempt: job.Attempt, Worker: w.name}); err != nil {
		return err
	}
	e := a.Entry()
	w.mu.Lock()
	w.jobs[e.ID] = &runningJob{id: job.ID, attempt: job.Attempt}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.jobs, e.ID)
		w.mu.Unlock()
	}()
	var prevStatus *batch.Status
	if prev != nil {
		prevStatus = prev.Status
	}
	st := w.Runner.RunOne(ctx, e, prevStatus)
	p := Progress{JobID: job.ID, Attempt: job.Attempt, Worker: w.name, Status: &st}
	if d := st.Delivery; d != nil {
		if n := len(d.Commits); n > 0 && d.Status != deliver.StatusCommitted {
			p.PushedCommit = d.Commits[n-1].Hash
		}
		if d.PR != nil {
			p.PR = d.PR.Number
		}
	}
	// The outcome is recorded even when the job's context ended.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	switch st.State {
	case batch.StateDone:
		p.Stage = StageDone
		return w.q.record(rctx, p)
	case batch.StateFailed:
		p.Stage = StageFailed
		if err := w.q.record(rctx, p); err != nil {
			return err
		}
		return river.JobCancel(errors.New(st.Error))
	default:
		p.Stage = StageInterrupted
		if err := w.q.record(rctx, p); err != nil {
			return err
		}
		return fmt.Errorf("interrupted: %s", st.Error)
	}
}

// Timeout implements river.Worker: the repository's limit plus Grace. (A job
// without a positive timeout is never rescued by River.)
func (w *RepoWorker) Timeout(job *river.Job[RepoArgs]) time.Duration {
	limit := job.Args.Timeout
	if limit <= 0 && w.Runner != nil {
		limit = w.Runner.Options().Timeout
	}
	if limit <= 0 {
		return 0 // the client's JobTimeout
	}
	return limit + w.grace()
}

func (w *RepoWorker) grace() time.Duration {
	if w.Grace > 0 {
		return w.Grace
	}
	return DefaultGrace
}

// DefaultGrace is RepoWorker.Grace's default.
const DefaultGrace = 10 * time.Second

// BotArgs is one webhook job of the GitHub App, unique per delivery (a
// redelivered event is not run twice, even across restarts).
type BotArgs struct {
	Job bot.Job `json:"job"`
}

// Kind implements river.JobArgs.
func (BotArgs) Kind() string { return KindBot }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (BotArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueBot, MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates}}
}

// BotWorker runs the bot's jobs with its Server.
type BotWorker struct {
	river.WorkerDefaults[BotArgs]
	Server *bot.Server
	// JobTimeout is the bot's bot.job_timeout (River's limit adds DefaultGrace).
	JobTimeout time.Duration
	q          *Queue
}

// Work implements river.Worker. A failed bot job has already told the user
// (a comment); it is not retried, so no comment is posted twice.
func (w *BotWorker) Work(ctx context.Context, job *river.Job[BotArgs]) error {
	if w.Server == nil {
		return errors.New("queue: this client runs no bot jobs")
	}
	if err := w.Server.RunJob(ctx, job.Args.Job); err != nil {
		return river.JobCancel(err)
	}
	return nil
}

// Timeout implements river.Worker: bot.job_timeout plus DefaultGrace (the
// bot enforces its limit itself).
func (w *BotWorker) Timeout(*river.Job[BotArgs]) time.Duration {
	if w.JobTimeout <= 0 {
		return 0
	}
	return w.JobTimeout + DefaultGrace
}

// BotQueue adapts a Queue to the bot's durable job queue.
type BotQueue struct{ Q *Queue }

// Enqueue implements bot.JobQueue; it reports whether the job is new.
func (b BotQueue) Enqueue(ctx context.Context, j bot.Job) (bool, error) {
	res, err := b.Q.eng.insert(ctx, BotArgs{Job: j}, nil)
	if err != nil {
		return false, fmt.Errorf("queue: enqueue bot job: %w", err)
	}
	return !res.UniqueSkippedAsDuplicate, nil
}

// Pending counts bot jobs not yet finished.
func (b BotQueue) Pending(ctx context.Context) (int, error) {
	res, err := b.Q.eng.list(ctx, river.NewJobListParams().Kinds(KindBot).First(10_000).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled))
	if err != nil {
		return 0, err
	}
	return len(res.Jobs), nil
}
