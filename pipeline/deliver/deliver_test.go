package deliver_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/gh"
	"github.com/pallasify/pallasify/pipeline/gh/ghtest"
	"github.com/pallasify/pallasify/pipeline/redact"
)

const branch = "pallasify/tpu-migration"

// deliverOnce clones url (depth 1), migrates it with the stand-in migrator
// and delivers.
func deliverOnce(t *testing.T, url string, ao acquire.Options, do deliver.Options) (*deliver.Result, error) {
	t.Helper()
	ctx := context.Background()
	ao.Workspace = t.TempDir()
	src, err := acquire.Open(ctx, url, ao)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	defer src.Cleanup()
	run, err := gittest.Migrate(ctx, src.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if do.Version == "" {
		do.Version = "9.9.9"
	}
	return deliver.Run(ctx, src, run, do)
}

func subjects(t *testing.T, bare string) []string {
	t.Helper()
	out := gittest.Git(t, bare, "log", "--reverse", "--format=%s", "main.."+branch)
	return strings.Split(out, "\n")
}

func TestBranchCommitsPushLocalBare(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(1))
	url := "file://" + bare
	cfg := config.Defaults()
	cfg.Commit.AuthorName, cfg.Commit.AuthorEmail = "TPU Bot", "tpu-bot@example.com"

	res, err := deliverOnce(t, url, acquire.Options{}, deliver.Options{Config: cfg, Push: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != deliver.StatusPushed || res.Branch != branch || res.Base != "main" {
		t.Fatalf("result %+v", res)
	}
	want := []string{
		"pallasify: rewrite CUDA device code for TPU",
		"pallasify: place Hugging Face models on the TPU device",
		"pallasify: tune torch.compile for TPU",
		"pallasify: add the migration report",
	}
	if got := subjects(t, bare); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("commits:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Each commit holds only its family's files.
	files := gittest.Git(t, bare, "show", "--format=", "--name-only", branch+"~3")
	if files != "train.py" {
		t.Errorf("device commit files: %q", files)
	}
	if f := gittest.Git(t, bare, "show", "--format=", "--name-only", branch+"~2"); f != "hf/infer.py" {
		t.Errorf("hf commit files: %q", f)
	}
	msg := gittest.Git(t, bare, "log", "-1", "--format=%B", branch+"~3")
	base := gittest.Git(t, bare, "rev-parse", "main")
	for _, w := range []string{"Pallasify-Version: 9.9.9", "Pallasify-Rules: PDV001, PDV002", "Pallasify-Base: " + base, "- train.py: 3 rewrites"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	if a := gittest.Git(t, bare, "log", "-1", "--format=%an <%ae>|%cn <%ce>", branch); a != "TPU Bot <tpu-bot@example.com>|TPU Bot <tpu-bot@example.com>" {
		t.Errorf("author/committer %q", a)
	}
	train := gittest.Git(t, bare, "show", branch+":train.py")
	if !strings.Contains(train, `torch.device("tpu")`) || strings.Contains(train, "cuda") {
		t.Errorf("train.py on branch:\n%s", train)
	}
	if rep := gittest.Git(t, bare, "show", branch+":"+deliver.ReportPath); !strings.Contains(rep, "pallasify migrate report") {
		t.Errorf("report file:\n%s", rep)
	}
	if gittest.Git(t, bare, "rev-parse", branch+"~4") != base {
		t.Error("branch is not based on main")
	}
	if st := gittest.Git(t, bare, "fsck", "--no-progress"); strings.Contains(st, "error") {
		t.Errorf("fsck: %s", st)
	}

	// Re-run, same base: the remote already has this change; nothing pushed.
	tip := gittest.Git(t, bare, "rev-parse", branch)
	res, err = deliverOnce(t, url, acquire.Options{}, deliver.Options{Config: cfg, Push: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != deliver.StatusUpToDate || gittest.Git(t, bare, "rev-parse", branch) != tip {
		t.Fatalf("re-run: %+v", res)
	}

	// The base moves: the branch is regenerated from the new base (lease-guarded force push).
	pushToMain(t, bare, map[string]string{"extra.py": "import torch\nx = torch.zeros(1, device=\"cuda\")\n"})
	newBase := gittest.Git(t, bare, "rev-parse", "main")
	res, err = deliverOnce(t, url, acquire.Options{}, deliver.Options{Config: cfg, Push: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != deliver.StatusPushed || gittest.Git(t, bare, "rev-parse", branch+"~4") != newBase {
		t.Fatalf("regenerate: %+v (branch~4 = %s, main = %s)", res, gittest.Git(t, bare, "rev-parse", branch+"~4"), newBase)
	}
	if n := gittest.Git(t, bare, "rev-list", "--count", "main.."+branch); n != "4" {
		t.Errorf("regenerated branch has %s commits over main", n)
	}
}

func pushToMain(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "w")
	gittest.Git(t, filepath.Dir(work), "clone", "-q", bare, work)
	gittest.WriteTree(t, work, files)
	gittest.Git(t, work, "add", "-A")
	gittest.Git(t, work, "commit", "-q", "-m", "more work on main")
	gittest.Git(t, work, "push", "-q", "origin", "main")
}

func TestHumanCommitStops(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(2))
	url := "file://" + bare
	if _, err := deliverOnce(t, url, acquire.Options{}, deliver.Options{Push: true}); err != nil {
		t.Fatal(err)
	}
	// A human pushes a fix on top of pallasify's branch.
	work := filepath.Join(t.TempDir(), "w")
	gittest.Git(t, filepath.Dir(work), "clone", "-q", "-b", branch, bare, work)
	gittest.WriteTree(t, work, map[string]string{"train.py": "# tuned by hand\n"})
	gittest.Git(t, work, "commit", "-q", "-am", "hand-tune the training loop")
	gittest.Git(t, work, "push", "-q", "origin", branch)
	tip := gittest.Git(t, bare, "rev-parse", branch)

	pushToMain(t, bare, map[string]string{"new.py": "import torch\ntorch.ones(1).cuda()\n"})
	_, err := deliverOnce(t, url, acquire.Options{}, deliver.Options{Push: true})
	if !errors.Is(err, deliver.ErrForeignCommits) {
		t.Fatalf("want ErrForeignCommits, got %v", err)
	}
	for _, w := range []string{"not made by pallasify", "hand-tune the training loop", "Fixture", "stopping without pushing"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message lacks %q: %v", w, err)
		}
	}
	if gittest.Git(t, bare, "rev-parse", branch) != tip {
		t.Fatal("the branch was overwritten")
	}
}

func TestHTTPBackendBasicAuthAndNoTokenInLogs(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(3))
	const token = "ghs_httpDeliverToken0123456789ab"
	srv := gittest.ServeHTTPSBackend(t, root, "x-access-token", token)
	url := srv.URL + "/acme/train.git"
	ao := acquire.Options{Token: token, TokenHosts: []string{srv.Host()}, CABundle: srv.CA}

	var secrets redact.Secrets
	secrets.Add(token)
	var logs bytes.Buffer
	log := secrets.JSONLogger(&logs, slog.LevelDebug)
	res, err := deliverOnce(t, url, ao, deliver.Options{Push: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("result", "res", res, "auth", acquire.BasicAuth(token))
	if res.Status != deliver.StatusPushed || strings.Contains(res.PushRemote, token) {
		t.Fatalf("result %+v", res)
	}
	if got := subjects(t, bare); len(got) != 4 {
		t.Fatalf("commits over http: %v", got)
	}
	if srv.Unauthorized == 0 {
		t.Log("client sent credentials pre-emptively")
	}
	// A push with a wrong token is refused, and the error does not carry it.
	ao.Workspace = t.TempDir()
	src, err := acquire.Open(context.Background(), url, ao)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Cleanup()
	run, _ := gittest.Migrate(context.Background(), src.Dir)
	run.Files[0].Updated = []byte("changed\n")
	const wrong = "ghs_wrongWrongWrong0123456789"
	_, err = deliver.Run(context.Background(), src, run, deliver.Options{Push: true, Auth: acquire.BasicAuth(wrong)})
	if err == nil {
		t.Fatal("push with a wrong token succeeded")
	}
	log.Error("push failed", "err", err)
	if strings.Contains(err.Error(), wrong) {
		t.Errorf("error has the token: %v", err)
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), wrong[4:]) {
		t.Fatalf("token in logs:\n%s", logs.String())
	}
}

func TestPullRequestLifecycle(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(4))
	url := "file://" + bare
	const token = "ghp_prLifecycleToken0123456789"
	api := ghtest.New(t, token)
	api.AddRepo(ghtest.Repo{Owner: "acme", Name: "train", CanPush: true})
	client, err := gh.New(gh.Options{APIURL: api.URL, Token: token, MinGap: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.PR.Labels = []string{"pallasify", "tpu"}
	opts := deliver.Options{Config: cfg, PR: true, GitHub: client, Owner: "acme", Repo: "train"}

	// First run: one draft PR, labelled.
	api.SecondaryLimit("POST", "/pulls", 1)
	start := time.Now()
	res, err := deliverOnce(t, url, acquire.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < time.Second {
		t.Error("secondary rate limit not waited out")
	}
	prs := api.PRs()
	if len(prs) != 1 || res.PR == nil || res.PR.Action != gh.Created {
		t.Fatalf("first run: %+v %+v", res, prs)
	}
	p := prs[0]
	if !p.Draft || p.Head != branch || p.HeadOwner != "acme" || p.Base != "main" || strings.Join(p.Labels, ",") != "pallasify,tpu" {
		t.Errorf("pr = %+v", p)
	}
	for _, w := range []string{"### Commits", "rewrite CUDA device code for TPU", "### By rule", "PDV001", "### Reproduce locally", gh.ChangeSetMarker(res.ChangeSet)} {
		if !strings.Contains(p.Body, w) {
			t.Errorf("PR body lacks %q", w)
		}
	}

	// Re-run after the base moved: same PR updated, not duplicated.
	pushToMain(t, bare, map[string]string{"more.py": "import torch\nm = torch.nn.Linear(1, 1).cuda()\n"})
	res, err = deliverOnce(t, url, acquire.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(api.PRs()) != 1 || res.PR.Action != gh.Updated || res.PR.Number != p.Number || api.Count("POST", "/pulls") != 2 /* one 403 + one create */ {
		t.Fatalf("second run: %+v prs=%d creates=%d", res.PR, len(api.PRs()), api.Count("POST", "/pulls"))
	}

	// A human closes it: the same change set is not proposed again, nothing pushed.
	api.ClosePR(p.Number, false)
	tip := gittest.Git(t, bare, "rev-parse", branch)
	res, err = deliverOnce(t, url, acquire.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != deliver.StatusClosedByHuman || len(api.PRs()) != 1 || api.PRs()[0].State != "closed" {
		t.Fatalf("after close: %+v %+v", res, api.PRs())
	}
	if gittest.Git(t, bare, "rev-parse", branch) != tip {
		t.Error("pushed after a human closed the PR")
	}
	for _, r := range api.Requests() {
		if r.Method == "PATCH" && strings.Contains(r.Body, `"state"`) {
			t.Errorf("PR state changed by pallasify: %s", r.Body)
		}
	}
	// A new change (the base moved again) is a new change set: a new PR.
	pushToMain(t, bare, map[string]string{"again.py": "import torch\nz = torch.zeros(2).cuda()\n"})
	res, err = deliverOnce(t, url, acquire.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.PR == nil || res.PR.Action != gh.Created || len(api.PRs()) != 2 {
		t.Fatalf("new change set: %+v", res)
	}
}

func TestForkWhenNoPushRights(t *testing.T) {
	root := t.TempDir()
	upstream := gittest.NewRemote(t, root, "acme/train", gittest.Sources(5))
	fork := filepath.Join(root, "bot", "train.git") // a fork shares the upstream's history
	gittest.Git(t, root, "clone", "-q", "--bare", upstream, fork)
	const token = "ghp_forkToken0123456789abcdef"
	api := ghtest.New(t, token)
	api.AddRepo(ghtest.Repo{Owner: "acme", Name: "train", CanPush: false, ForkOwner: "bot", ForkCloneURL: "file://" + fork})
	client, _ := gh.New(gh.Options{APIURL: api.URL, Token: token, MinGap: -1})
	res, err := deliverOnce(t, "file://"+upstream, acquire.Options{}, deliver.Options{PR: true, GitHub: client, Owner: "acme", Repo: "train"})
	if err != nil {
		t.Fatal(err)
	}
	if res.PushRemote != "file://"+fork {
		t.Errorf("pushed to %s", res.PushRemote)
	}
	if _, err := gittest.GitErr(upstream, "rev-parse", "--verify", branch); err == nil {
		t.Error("pushed to the upstream without rights")
	}
	gittest.Git(t, fork, "rev-parse", "--verify", branch)
	if p := api.PRs(); len(p) != 1 || p[0].HeadOwner != "bot" || p[0].Repo != "acme/train" {
		t.Fatalf("prs %+v", p)
	}
}

func TestLocalRepoBranchWithoutPush(t *testing.T) {
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	gittest.WriteTree(t, dir, gittest.Sources(6))
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "init")
	src, err := acquire.Open(context.Background(), dir, acquire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, _ := gittest.Migrate(context.Background(), src.Dir)
	res, err := deliver.Run(context.Background(), src, run, deliver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != deliver.StatusCommitted || gittest.Git(t, dir, "branch", "--show-current") != "main" {
		t.Fatalf("%+v", res)
	}
	if st := gittest.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("work tree not clean after delivery:\n%s", st)
	}
	// No changes → no branch work at all.
	empty := &pipeline.Run{Root: dir}
	res, err = deliver.Run(context.Background(), src, empty, deliver.Options{})
	if err != nil || res.Status != deliver.StatusNoChanges {
		t.Fatalf("%+v %v", res, err)
	}
	// Not a git tree: a clear error.
	plain, _ := acquire.Open(context.Background(), t.TempDir(), acquire.Options{})
	if _, err := deliver.Run(context.Background(), plain, run, deliver.Options{}); err == nil || !strings.Contains(err.Error(), "not a git work tree") {
		t.Errorf("plain dir: %v", err)
	}
}
