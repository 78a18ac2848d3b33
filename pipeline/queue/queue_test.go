package queue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/queue"
)

// countingMigrate counts migrations per repository root name.
type countingMigrate struct {
	mu    sync.Mutex
	count map[string]int
}

func (c *countingMigrate) migrate(ctx context.Context, root string, _ *config.Config) (*pipeline.Run, error) {
	c.mu.Lock()
	c.count[filepath.Base(root)]++
	c.mu.Unlock()
	return gittest.Migrate(ctx, root)
}

// openSQLiteWorker opens a SQLite queue in dir with n repository workers.
func openSQLiteWorker(t *testing.T, dir string, n int, m batch.Migrator) *queue.Queue {
	t.Helper()
	w := queue.NewRepoWorker()
	rn, err := batch.NewRunner(batch.Options{RunDir: filepath.Join(dir, "run"), Migrate: m, Version: "test", Progress: w.Tracker()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	w.Runner = rn
	q, err := queue.Open(context.Background(), queue.Config{URL: filepath.Join(dir, "queue.db"), RepoWorkers: n, Repos: w,
		PollInterval: 50 * time.Millisecond, JobTimeout: 30 * time.Second, RescueAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	return q
}

func TestSQLiteUniqueJobsRunOnce(t *testing.T) {
	root := t.TempDir()
	var jobs []queue.RepoArgs
	for i := 1; i <= 4; i++ {
		bare := gittest.NewRemote(t, root, fmt.Sprintf("acme/r%d", i), gittest.Sources(i))
		src := "file://" + bare
		base, err := queue.ResolveBase(context.Background(), src, "", nil)
		if err != nil || len(base) != 40 {
			t.Fatalf("base of %s: %q %v", src, base, err)
		}
		jobs = append(jobs, queue.RepoArgs{Source: src, BaseCommit: base, ID: fmt.Sprintf("r%d", i)})
	}
	jobs = append(jobs, queue.RepoArgs{Source: "file://" + filepath.Join(root, "acme", "missing.git"), ID: "missing"})
	dir := t.TempDir()
	cm := &countingMigrate{count: map[string]int{}}
	q := openSQLiteWorker(t, dir, 2, cm.migrate)
	ctx := context.Background()
	first, err := q.Submit(ctx, jobs, queue.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The same list again, before and after the run: nothing new is queued.
	again, err := q.Submit(ctx, jobs, queue.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i, e := range first {
		if e.Duplicate || !again[i].Duplicate || again[i].Job.ID != e.Job.ID {
			t.Fatalf("job %d: first duplicate=%v, again duplicate=%v (ids %d, %d)", i, e.Duplicate, again[i].Duplicate, e.Job.ID, again[i].Job.ID)
		}
		ids = append(ids, e.Job.ID)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rows, err := q.Wait(wctx, ids, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		want := rivertype.JobStateCompleted
		if jobs[i].ID == "missing" {
			want = rivertype.JobStateCancelled
		}
		if rows[id].State != want {
			t.Errorf("%s: state %s, want %s (errors %v)", jobs[i].ID, rows[id].State, want, rows[id].Errors)
		}
		p, err := q.Progress(ctx, id)
		if err != nil || p == nil || p.Status == nil {
			t.Fatalf("%s: progress %+v %v", jobs[i].ID, p, err)
		}
		if want == rivertype.JobStateCompleted && (p.Stage != queue.StageDone || p.Status.State != batch.StateDone) {
			t.Errorf("%s: progress %+v", jobs[i].ID, p)
		}
		if want == rivertype.JobStateCancelled && (p.Stage != queue.StageFailed || !strings.Contains(p.Status.Error, "missing")) {
			t.Errorf("%s: progress %+v", jobs[i].ID, p)
		}
	}
	late, err := q.Submit(ctx, jobs, queue.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range late {
		if !e.Duplicate || e.Retried {
			t.Errorf("%s: resubmitted after the run: duplicate=%v retried=%v", e.Args.ID, e.Duplicate, e.Retried)
		}
	}
	for i := 1; i <= 4; i++ {
		if n := cm.count[fmt.Sprintf("r%d", i)]; n != 1 {
			t.Errorf("r%d migrated %d times, want once", i, n)
		}
	}
	// A changed option is another job; --retry-failed runs the failed one again.
	changed := jobs[0]
	changed.Target = "tpu"
	more, err := q.Submit(ctx, []queue.RepoArgs{changed, jobs[4]}, queue.SubmitOptions{RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	if more[0].Duplicate || !more[1].Duplicate || !more[1].Retried {
		t.Fatalf("changed target: duplicate=%v; failed: duplicate=%v retried=%v", more[0].Duplicate, more[1].Duplicate, more[1].Retried)
	}
	rows, err = q.Wait(wctx, []int64{more[0].Job.ID, more[1].Job.ID}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if rows[more[0].Job.ID].State != rivertype.JobStateCompleted || rows[more[1].Job.ID].State != rivertype.JobStateCancelled {
		t.Errorf("states %s, %s", rows[more[0].Job.ID].State, rows[more[1].Job.ID].State)
	}
	if cm.count["r1"] != 2 {
		t.Errorf("r1 with another target migrated %d times in all, want 2", cm.count["r1"])
	}
	if n := len(rows[more[1].Job.ID].Errors); n != 2 {
		t.Errorf("failed job retried on request has %d recorded errors, want 2", n)
	}
}
