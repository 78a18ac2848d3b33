package queue_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/gh/ghtest"
	"github.com/pallasify/pallasify/pipeline/queue"
	"github.com/pallasify/pallasify/pipeline/queue/pgtest"
)

const token = "ghp_queueWorkerToken0123456789abc"

// buildBinary builds the real pallasify command for the test.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pallasify")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/pallasify/pallasify/cmd/pallasify")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// holdingProxy forwards to the fake GitHub, except that the first request
// creating a pull request on hold is kept open, never forwarded, until its
// client goes away (the worker sending it is killed meanwhile).
type holdingProxy struct {
	proxy  *httputil.ReverseProxy
	hold   string
	held   atomic.Bool
	caught chan struct{}
}

func (p *holdingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == p.hold && p.held.CompareAndSwap(false, true) {
		close(p.caught)
		<-r.Context().Done()
		return
	}
	p.proxy.ServeHTTP(w, r)
}

// worker is one `pallasify worker` process.
type worker struct {
	cmd *exec.Cmd
	log string
}

func startWorker(t *testing.T, bin, dir, pgURL, ops string) *worker {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &worker{log: filepath.Join(dir, "stderr.log")}
	f, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w.cmd = exec.Command(bin, "worker", "--queue", pgURL, "--config", ops, "--run-dir", filepath.Join(dir, "run"),
		"-j", "2", "--timeout", "12s", "--rescue-after", "23s", "--poll", "200ms")
	w.cmd.Env = append(gittest.Env(), "GITHUB_TOKEN="+token)
	w.cmd.Stdout, w.cmd.Stderr = f, f
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			w.cmd.Process.Kill()
			w.cmd.Wait()
		}
	})
	return w
}

func (w *worker) lines(t *testing.T) []string {
	data, _ := os.ReadFile(w.log)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// count returns how many log lines carry msg and mention repo.
func (w *worker) count(t *testing.T, msg, repo string) int {
	n := 0
	for _, l := range w.lines(t) {
		if strings.Contains(l, `"msg":"`+msg+`"`) && strings.Contains(l, `"repo":"`+repo+`"`) {
			n++
		}
	}
	return n
}

// TestPostgresWorkersKillOneMidRun is the queue's acceptance test: three
// `pallasify worker` processes share a real PostgreSQL queue holding 20
// local repositories (submitted twice); the worker that is delivering
// repo07 is killed with SIGKILL after pushing and while opening the pull
// request. Every repository is done exactly once, each has one push and
// one pull request on the fake GitHub, and repo07's retry, by another
// worker, pushes nothing and opens the one pull request.
func TestPostgresWorkersKillOneMidRun(t *testing.T) {
	pg := pgtest.Start(t)
	bin := buildBinary(t)
	root := t.TempDir()
	api := ghtest.New(t, token)
	target, _ := url.Parse(api.URL)
	px := &holdingProxy{proxy: httputil.NewSingleHostReverseProxy(target), hold: "/repos/acme/repo07/pulls", caught: make(chan struct{})}
	proxy := &http.Server{Handler: px}
	ln := listen(t)
	go proxy.Serve(ln)
	t.Cleanup(func() { proxy.Close() })

	// The repositories are served by a local git host over plain HTTP, named
	// as a GitHub host in the config (pull requests need one; plain HTTP
	// never gets the token).
	git := gittest.ServeOpenHTTPBackend(t, root)
	const n = 20
	var list strings.Builder
	bares := map[string]string{}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("repo%02d", i)
		api.AddRepo(ghtest.Repo{Owner: "acme", Name: name, CanPush: true})
		bare := gittest.NewRemote(t, root, "acme/"+name, gittest.Sources(i))
		// Every push the repository receives is one line of pushes.log.
		hook := filepath.Join(bare, "hooks", "post-receive")
		if err := os.WriteFile(hook, []byte("#!/bin/sh\ncat >> pushes.log\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		bares[name] = bare
		fmt.Fprintf(&list, "%s/acme/%s.git\n", git.URL, name)
	}
	work := t.TempDir()
	listPath := filepath.Join(work, "repos.txt")
	ops := filepath.Join(work, "ops.yaml")
	os.WriteFile(listPath, []byte(list.String()), 0o644)
	os.WriteFile(ops, []byte(fmt.Sprintf("github:\n  api_url: http://%s/\n  hosts: [%q]\n", ln.Addr(), git.Host())), 0o644)

	// Submitted twice before any worker runs: 20 jobs, not 40.
	for round := 0; round < 2; round++ {
		submit := exec.Command(bin, "batch", listPath, "--queue", pg.URL, "--enqueue-only", "--pr", "--config", ops)
		submit.Env = append(gittest.Env(), "GITHUB_TOKEN="+token)
		out, err := submit.CombinedOutput()
		if err != nil {
			t.Fatalf("submit %d: %v\n%s", round, err, out)
		}
		want := "queued"
		if round == 1 {
			want = "already queued (available)"
		}
		if c := strings.Count(string(out), ": "+want+"\n"); c != n {
			t.Fatalf("submit %d: %d lines say %q, want %d:\n%s", round, c, want, n, out)
		}
	}

	start := time.Now()
	workers := make([]*worker, 3)
	for i := range workers {
		workers[i] = startWorker(t, bin, filepath.Join(work, fmt.Sprintf("w%d", i)), pg.URL, ops)
	}
	repo07 := git.URL + "/acme/repo07.git"
	var victim *worker
	select {
	case <-px.caught:
		for _, w := range workers {
			if w.count(t, "repo start", repo07) > 0 {
				victim = w
			}
		}
	case <-time.After(60 * time.Second):
		dumpLogs(t, workers)
		t.Fatal("no worker reached repo07's pull request")
	}
	if victim == nil {
		t.Fatal("repo07's pull request was requested by no worker that logged it")
	}
	if err := victim.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	victim.cmd.Wait()
	killedAt := time.Since(start)

	q, err := queue.Open(context.Background(), queue.Config{URL: pg.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	deadline := time.Now().Add(100 * time.Second)
	var jobs []queue.JobView
	for {
		jobs, err = q.RepoJobs(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, j := range jobs {
			if j.State == string(rivertype.JobStateCompleted) {
				done++
			}
		}
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			dumpLogs(t, workers)
			t.Fatalf("%d of %d jobs completed: %+v", done, n, jobs)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("20 repositories on 3 workers: killed one at %.1fs, all done at %.1fs", killedAt.Seconds(), time.Since(start).Seconds())
	if len(jobs) != n {
		t.Fatalf("%d jobs in the queue, want %d", len(jobs), n)
	}

	prs := map[string]int{}
	for _, p := range api.PRs() {
		prs[p.Repo]++
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("repo%02d", i)
		src := git.URL + "/acme/" + name + ".git"
		if prs["acme/"+name] != 1 {
			t.Errorf("%s: %d pull requests, want 1", name, prs["acme/"+name])
		}
		pushes, _ := os.ReadFile(filepath.Join(bares[name], "pushes.log"))
		if c := strings.Count(string(pushes), "\n"); c != 1 {
			t.Errorf("%s: %d pushes, want 1:\n%s", name, c, pushes)
		}
		done := 0
		for _, w := range workers {
			done += w.count(t, "repo done", src)
		}
		if done != 1 {
			t.Errorf("%s: done %d times, want exactly once", name, done)
		}
	}
	var j07 *queue.JobView
	for i := range jobs {
		if jobs[i].Args.Source == repo07 {
			j07 = &jobs[i]
		}
	}
	if j07 == nil || j07.Progress == nil {
		t.Fatalf("repo07's job has no progress: %+v", j07)
	}
	p := j07.Progress
	tip := gittest.Git(t, bares["repo07"], "rev-parse", "pallasify/tpu-migration")
	if j07.Attempt < 2 || p.Stage != queue.StageDone || p.PushedCommit != tip || p.PR == 0 {
		t.Errorf("repo07: attempt %d, progress %+v (branch tip %s)", j07.Attempt, p, tip)
	}
	if p.Status == nil || p.Status.Delivery == nil || p.Status.Delivery.Status != "up-to-date" {
		t.Errorf("repo07's retry should have found its branch already pushed: %+v", p.Status)
	}
	if victimName := fmt.Sprintf(":%d", victim.cmd.Process.Pid); strings.HasSuffix(p.Worker, victimName) {
		t.Errorf("repo07 recorded done by the killed worker %s", p.Worker)
	}
	resumed := 0
	for _, w := range workers {
		if w != victim {
			resumed += w.count(t, "job resumed", repo07)
		}
	}
	if resumed != 1 {
		t.Errorf("surviving workers logged resuming repo07 from its recorded stage %d times, want once", resumed)
	}

	// The same list after the run: nothing new is queued; status lists 20 done.
	again := exec.Command(bin, "batch", listPath, "--queue", pg.URL, "--enqueue-only", "--pr", "--config", ops)
	again.Env = append(gittest.Env(), "GITHUB_TOKEN="+token)
	if out, err := again.CombinedOutput(); err != nil || strings.Count(string(out), "already queued (completed)") != n {
		t.Fatalf("resubmit: %v\n%s", err, out)
	}
	if git.Seen(token) {
		t.Error("the token was sent to the plain-HTTP git host")
	}
	status := exec.Command(bin, "batch", "status", "--queue", pg.URL)
	out, err := status.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "20 jobs: 20 completed") || strings.Contains(string(out), token) {
		t.Fatalf("batch status: %v\n%s", err, out)
	}
	for _, r := range api.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/pulls") && r.Status != http.StatusCreated {
			t.Errorf("pull request creation answered %d: %s", r.Status, r.Path)
		}
	}
}

func dumpLogs(t *testing.T, workers []*worker) {
	for _, w := range workers {
		t.Logf("%s:\n%s", w.log, strings.Join(w.lines(t), "\n"))
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
