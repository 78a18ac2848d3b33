package bot_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline/bot"
	"github.com/pallasify/pallasify/pipeline/queue"
)

// TestBotRestartLosesNothing: a bot accepts a command into its durable
// (SQLite) queue and stops before running it; the next bot on the same
// queue runs it once, and GitHub redelivering the event to the new bot
// queues nothing new.
func TestBotRestartLosesNothing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "queue.db")
	q1, err := queue.Open(context.Background(), queue.Config{URL: db})
	if err != nil {
		t.Fatal(err)
	}
	var opts bot.Options
	e := newEnv(t, func(o *bot.Options) {
		o.Jobs = queue.BotQueue{Q: q1}
		opts = *o
	})
	if code := e.post("issue_comment", "d-7", e.comment("alice", "/pallasify migrate"), good); code != http.StatusAccepted {
		t.Fatalf("status %d", code)
	}
	pending, err := queue.BotQueue{Q: q1}.Pending(context.Background())
	if err != nil || pending != 1 || *e.runs != 0 {
		t.Fatalf("before the restart: %d pending (%v), %d runs", pending, err, *e.runs)
	}
	// The bot goes away (nothing ran) and another starts on the same queue.
	e.http.Close()
	q1.Close()

	bw := &queue.BotWorker{JobTimeout: opts.JobTimeout}
	q2, err := queue.Open(context.Background(), queue.Config{URL: db, BotWorkers: 1, Bot: bw, PollInterval: 50 * time.Millisecond,
		JobTimeout: opts.JobTimeout + queue.DefaultGrace, RescueAfter: opts.JobTimeout + time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer q2.Close()
	opts.Jobs = queue.BotQueue{Q: q2}
	srv2, err := bot.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	bw.Server = srv2
	e.http = httptest.NewServer(srv2.Handler())
	if code := e.post("issue_comment", "d-7", e.comment("alice", "/pallasify migrate"), good); code != http.StatusAccepted {
		t.Fatalf("redelivery after the restart: status %d", code)
	}
	if err := q2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := queue.BotQueue{Q: q2}.Pending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bot jobs still pending\n%s", n, e.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.mu.Lock()
	runs := *e.runs
	e.mu.Unlock()
	if prs := e.api.PRs(); len(prs) != 1 || runs != 1 || e.api.Count("POST", "/pulls") != 1 {
		t.Fatalf("after the restart: %d pull requests, %d runs\n%s", len(prs), runs, e.logs.String())
	}
	if cs := e.api.Comments(); len(cs) != 1 {
		t.Errorf("comments %+v", cs)
	}
}
