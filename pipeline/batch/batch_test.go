package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/gh"
	"github.com/pallasify/pallasify/pipeline/gh/ghtest"
)

const token = "ghp_batchSecretToken0123456789xyz"

// TestMain doubles as the batch process the kill test runs and kills.
func TestMain(m *testing.M) {
	if os.Getenv("PALLASIFY_BATCH_HELPER") == "1" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

func helperMain() int {
	f, err := os.Open(os.Getenv("BATCH_LIST"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	entries, probs, err := batch.ParseList(f, "repos.txt")
	f.Close()
	for _, p := range probs {
		fmt.Fprintln(os.Stderr, p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	hang, marker := os.Getenv("BATCH_HANG"), os.Getenv("BATCH_MARKER")
	client, err := gh.New(gh.Options{APIURL: os.Getenv("BATCH_API"), Token: os.Getenv("BATCH_TOKEN"), MinGap: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	migrate := func(ctx context.Context, root string, cfg *config.Config) (*pipeline.Run, error) {
		if filepath.Base(root) == hang {
			os.WriteFile(marker, []byte("started"), 0o644)
			time.Sleep(time.Minute) // killed here
		}
		return gittest.Migrate(ctx, root)
	}
	_, err = batch.Run(context.Background(), entries, batch.Options{RunDir: os.Getenv("BATCH_RUNDIR"), Migrate: migrate,
		PR: true, GitHub: client, Token: os.Getenv("BATCH_TOKEN"), TokenHosts: []string{os.Getenv("BATCH_HOST")}, Concurrency: 3,
		Log: os.Stderr, Version: "test"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func readStatuses(t *testing.T, runDir string) map[string]batch.Status {
	t.Helper()
	out := map[string]batch.Status{}
	dirs, _ := os.ReadDir(filepath.Join(runDir, "repos"))
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(runDir, "repos", d.Name(), "status.json"))
		if err != nil {
			continue
		}
		var s batch.Status
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		out[s.Source] = s
	}
	return out
}

// countingMigrator records which roots it migrated.
type countingMigrator struct {
	mu    sync.Mutex
	roots []string
}

func (c *countingMigrator) migrate(ctx context.Context, root string, cfg *config.Config) (*pipeline.Run, error) {
	c.mu.Lock()
	c.roots = append(c.roots, filepath.Base(root))
	c.mu.Unlock()
	return gittest.Migrate(ctx, root)
}

func TestBatchKillResumeRetry(t *testing.T) {
	root := t.TempDir()
	api := ghtest.New(t, token)
	// The repositories are on a git host the config names as a GitHub host
	// (so pull requests can be opened), served over plain HTTP (so it gets
	// no token).
	srv := gittest.ServeOpenHTTPBackend(t, root)
	repoURL := func(name string) string { return srv.URL + "/acme/" + name + ".git" }
	var list strings.Builder
	list.WriteString("# twelve repositories\n\n")
	bad := repoURL("repo05")
	for i := 1; i <= 12; i++ {
		name := fmt.Sprintf("repo%02d", i)
		api.AddRepo(ghtest.Repo{Owner: "acme", Name: name, CanPush: true})
		if i == 5 { // the broken one: its URL names no repository (yet)
			fmt.Fprintf(&list, "%s\n", bad)
			continue
		}
		gittest.NewRemote(t, root, "acme/"+name, gittest.Sources(i))
		opts := ""
		if i == 3 {
			opts = " target=tpu branch=main"
		}
		fmt.Fprintf(&list, "%s%s\n", repoURL(name), opts)
	}
	listPath := filepath.Join(t.TempDir(), "repos.txt")
	os.WriteFile(listPath, []byte(list.String()), 0o644)
	runDir := filepath.Join(t.TempDir(), "run")
	marker := filepath.Join(t.TempDir(), "hang-started")

	// Run 1, in a child process killed while repo07 is mid-run.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PALLASIFY_BATCH_HELPER=1", "BATCH_LIST="+listPath, "BATCH_RUNDIR="+runDir,
		"BATCH_HANG=repo07", "BATCH_MARKER="+marker, "BATCH_API="+api.URL, "BATCH_TOKEN="+token, "BATCH_HOST="+srv.Host())
	var childLog bytes.Buffer
	cmd.Stdout, cmd.Stderr = &childLog, &childLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		st := readStatuses(t, runDir)
		done, failed := 0, 0
		for _, s := range st {
			switch s.State {
			case batch.StateDone:
				done++
			case batch.StateFailed:
				failed++
			}
		}
		if _, err := os.Stat(marker); err == nil && done == 10 && failed == 1 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run 1 did not reach the kill point: %d done, %d failed\n%s", done, failed, childLog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()

	st := readStatuses(t, runDir)
	hung := repoURL("repo07")
	if st[hung].State != batch.StateRunning {
		t.Fatalf("killed repo state %q", st[hung].State)
	}
	if s := st[bad]; s.State != batch.StateFailed || !strings.Contains(s.Error, "clone") {
		t.Fatalf("bad URL status %+v", s)
	}
	if len(api.PRs()) != 10 {
		t.Fatalf("PRs after run 1: %d", len(api.PRs()))
	}
	good := repoURL("repo01")
	for _, name := range []string{"diff.patch", "report.md", "report.json"} {
		data, err := os.ReadFile(filepath.Join(runDir, "repos", st[good].ID, name))
		if err != nil || len(data) == 0 {
			t.Errorf("artifact %s: %v", name, err)
		}
	}
	if d := st[good].Delivery; d == nil || d.PR == nil || d.PR.Action != gh.Created || st[good].FilesChanged != 3 {
		t.Errorf("repo01 status %+v", st[good])
	}

	// Run 2: resume. Only the killed repo runs; the failed one is not retried.
	entries := parseFile(t, listPath)
	cm := &countingMigrator{}
	client, _ := gh.New(gh.Options{APIURL: api.URL, Token: token, MinGap: -1})
	var log2 bytes.Buffer
	hosts := []string{srv.Host()}
	sum, err := batch.Run(context.Background(), entries, batch.Options{RunDir: runDir, Migrate: cm.migrate, PR: true,
		GitHub: client, Token: token, TokenHosts: hosts, Concurrency: 3, Log: &log2, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cm.roots, ",") != "repo07" {
		t.Fatalf("resume migrated %v, want only repo07", cm.roots)
	}
	if sum.Done != 11 || sum.Failed != 1 || sum.Skipped != 11 || sum.Ran != 1 || len(api.PRs()) != 11 {
		t.Fatalf("resume summary %+v, PRs %d", sum, len(api.PRs()))
	}
	if s := readStatuses(t, runDir)[hung]; s.Attempts != 2 || s.State != batch.StateDone {
		t.Errorf("killed repo after resume: %+v", s)
	}

	// Run 3: --retry-failed retries only the broken one (now fixed).
	gittest.NewRemote(t, root, "acme/repo05", gittest.Sources(5))
	cm = &countingMigrator{}
	sum, err = batch.Run(context.Background(), entries, batch.Options{RunDir: runDir, Migrate: cm.migrate, PR: true,
		GitHub: client, Token: token, TokenHosts: hosts, RetryFailed: true, Log: &log2, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cm.roots, ",") != "repo05" || sum.Done != 12 || sum.Failed != 0 || len(api.PRs()) != 12 {
		t.Fatalf("retry-failed migrated %v, summary %+v", cm.roots, sum)
	}
	md, _ := os.ReadFile(filepath.Join(runDir, "summary.md"))
	if !strings.Contains(string(md), "12 repositories: 12 done, 0 failed") || strings.Count(string(md), "\n| ") != 13 {
		t.Errorf("summary.md:\n%s", md)
	}

	// No token anywhere: child and parent logs, batch.log, statuses, reports, summaries.
	if strings.Contains(childLog.String(), token) || strings.Contains(log2.String(), token) {
		t.Error("token in logs")
	}
	if !strings.Contains(childLog.String(), `"msg":"repo done"`) {
		t.Errorf("child log has no JSON progress:\n%.2000s", childLog.String())
	}
	filepath.WalkDir(runDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(token)) {
				t.Errorf("token in %s", p)
			}
		}
		return nil
	})
	for _, r := range api.Requests() {
		if strings.Contains(r.Body, token) {
			t.Errorf("token in a request body to %s", r.Path)
		}
	}
	if srv.Seen(token) {
		t.Error("the plain-http git host received the token")
	}
}

func parseFile(t *testing.T, p string) []batch.Entry {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, probs, err := batch.ParseList(f, filepath.Base(p))
	if err != nil || len(probs) != 0 {
		t.Fatal(err, probs)
	}
	return e
}

func TestBatchCancelAndTimeout(t *testing.T) {
	root := t.TempDir()
	var entries []batch.Entry
	for i := 1; i <= 4; i++ {
		bare := gittest.NewRemote(t, root, fmt.Sprintf("o/r%d", i), gittest.Sources(i))
		entries = append(entries, batch.Entry{ID: fmt.Sprintf("r%d", i), Source: "file://" + bare})
	}
	entries[1].Timeout = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	migrate := func(ctx context.Context, root string, cfg *config.Config) (*pipeline.Run, error) {
		switch filepath.Base(root) {
		case "r2": // exceeds its own timeout
			<-ctx.Done()
			return nil, ctx.Err()
		case "r4": // the whole batch is cancelled while this one runs
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return gittest.Migrate(ctx, root)
	}
	runDir := t.TempDir()
	sum, err := batch.Run(ctx, entries, batch.Options{RunDir: runDir, Migrate: migrate, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	states := []string{}
	for _, s := range sum.Repos {
		states = append(states, s.State)
	}
	if strings.Join(states, ",") != "done,failed,done,interrupted" {
		t.Fatalf("states %v", states)
	}
	if !strings.Contains(sum.Repos[1].Error, "timed out after 100ms") {
		t.Errorf("timeout error %q", sum.Repos[1].Error)
	}
	// Resume runs only the interrupted one.
	cm := &countingMigrator{}
	sum, err = batch.Run(context.Background(), entries, batch.Options{RunDir: runDir, Migrate: cm.migrate})
	if err != nil || strings.Join(cm.roots, ",") != "r4" || sum.Done != 3 || sum.Failed != 1 {
		t.Fatalf("resume: %v %v %+v", err, cm.roots, sum)
	}
}

func TestParseList(t *testing.T) {
	cases := []struct {
		name, in, err string
		n             int
	}{
		{"ok", "# c\nhttps://github.com/a/b\n\n/local/path target=tpu push=false timeout=5m # note\n", "", 2},
		{"unknown option", "https://github.com/a/b color=red\n", "repos.txt:1: unknown option", 0},
		{"bad bool", "\nhttps://github.com/a/b pr=maybe\n", "repos.txt:2:", 0},
		{"bad target", "x target=gpu\n", "repos.txt:1:", 0},
		{"credentials", "https://u:ghp_secret@github.com/a/b\n", "credentials in a URL", 0},
		{"empty", "# nothing\n", "no repositories", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := batch.ParseList(strings.NewReader(c.in), "repos.txt")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				if strings.Contains(err.Error(), "ghp_secret") {
					t.Error("error echoes the secret")
				}
				return
			}
			if err != nil || len(got) != c.n {
				t.Fatalf("%v %+v", err, got)
			}
			if got[0].ID != "a__b" || got[1].Timeout != 5*time.Minute || *got[1].Push {
				t.Errorf("%+v", got)
			}
		})
	}
}

func TestBatchPRCap(t *testing.T) {
	root := t.TempDir()
	api := ghtest.New(t, token)
	srv := gittest.ServeOpenHTTPBackend(t, root)
	var entries []batch.Entry
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("cap%d", i)
		api.AddRepo(ghtest.Repo{Owner: "acme", Name: name, CanPush: true})
		gittest.NewRemote(t, root, "acme/"+name, gittest.Sources(i))
		entries = append(entries, batch.Entry{ID: name, Source: srv.URL + "/acme/" + name + ".git"})
	}
	ops := filepath.Join(t.TempDir(), "ops.yaml")
	os.WriteFile(ops, []byte("pr:\n  max_new_per_run: 1\n"), 0o644)
	client, _ := gh.New(gh.Options{APIURL: api.URL, Token: token, MinGap: -1})
	cm := &countingMigrator{}
	sum, err := batch.Run(context.Background(), entries, batch.Options{RunDir: t.TempDir(), ConfigPath: ops, Migrate: cm.migrate,
		PR: true, GitHub: client, TokenHosts: []string{srv.Host()}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 3 || len(api.PRs()) != 1 {
		t.Fatalf("summary %+v, PRs %d", sum, len(api.PRs()))
	}
	for _, s := range sum.Repos[1:] {
		if !strings.Contains(s.Note, "max_new_per_run") || s.Delivery == nil || s.Delivery.Status != "pushed" {
			t.Errorf("%s: %+v", s.ID, s)
		}
	}
}

// A finished repository runs again when its base commit or the run's
// options changed since, and with Force; otherwise it is skipped.
func TestBatchFreshness(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/fresh", gittest.Sources(1))
	other := gittest.NewRemote(t, root, "acme/still", gittest.Sources(2))
	entries := []batch.Entry{{ID: "fresh", Source: "file://" + bare}, {ID: "still", Source: "file://" + other}}
	runDir := t.TempDir()
	ops := filepath.Join(t.TempDir(), "ops.yaml")
	os.WriteFile(ops, []byte("pr:\n  title: one\n"), 0o644)
	run := func(mod func(*batch.Options)) []string {
		t.Helper()
		cm := &countingMigrator{}
		o := batch.Options{RunDir: runDir, ConfigPath: ops, Migrate: cm.migrate, Concurrency: 1, Version: "test"}
		if mod != nil {
			mod(&o)
		}
		if _, err := batch.Run(context.Background(), entries, o); err != nil {
			t.Fatal(err)
		}
		sort.Strings(cm.roots)
		return cm.roots
	}
	if got := run(nil); strings.Join(got, ",") != "fresh,still" {
		t.Fatalf("first run migrated %v", got)
	}
	if got := run(nil); len(got) != 0 {
		t.Fatalf("unchanged re-run migrated %v", got)
	}
	pushToMain(t, bare, map[string]string{"new.py": "import torch\nx = torch.ones(1).cuda()\n"})
	if got := run(nil); strings.Join(got, ",") != "fresh" {
		t.Fatalf("after a new commit on one repository, migrated %v", got)
	}
	os.WriteFile(ops, []byte("pr:\n  title: two\n"), 0o644)
	if got := run(nil); strings.Join(got, ",") != "fresh,still" {
		t.Fatalf("after the operator config changed, migrated %v", got)
	}
	if got := run(func(o *batch.Options) { o.Fingerprint = "kernels=false" }); strings.Join(got, ",") != "fresh,still" {
		t.Fatalf("after the stage flags changed, migrated %v", got)
	}
	if got := run(func(o *batch.Options) { o.Fingerprint = "kernels=false" }); len(got) != 0 {
		t.Fatalf("unchanged re-run migrated %v", got)
	}
	if got := run(func(o *batch.Options) { o.Fingerprint, o.Force = "kernels=false", true }); strings.Join(got, ",") != "fresh,still" {
		t.Fatalf("--force migrated %v", got)
	}
}

// pushToMain commits files onto main of a bare repository.
func pushToMain(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	work := t.TempDir()
	gittest.Git(t, work, "clone", "-q", bare, "w")
	w := filepath.Join(work, "w")
	gittest.WriteTree(t, w, files)
	gittest.Git(t, w, "add", "-A")
	gittest.Git(t, w, "commit", "-q", "-m", "more work")
	gittest.Git(t, w, "push", "-q", "origin", "HEAD:main")
}
