package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/gh/ghtest"
)

// TestMigrateGitURLPushPR runs `pallasify migrate <git URL> --pr` end to end
// with the real rule set: clone (depth 1), migrate, one commit per family,
// push, and a draft PR on a fake GitHub. The git host is named a GitHub
// host in the config but serves plain HTTP: it gets the clone and the push,
// never the token, which only the API (the configured GitHub) receives.
func TestMigrateGitURLPushPR(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(1))
	const token = "ghp_cliMigrateToken0123456789ab"
	api := ghtest.New(t, token)
	api.AddRepo(ghtest.Repo{Owner: "acme", Name: "train", CanPush: true})
	srv := gittest.ServeOpenHTTPBackend(t, root)
	url := srv.URL + "/acme/train.git"
	ops := filepath.Join(t.TempDir(), "ops.yaml")
	os.WriteFile(ops, []byte("github:\n  api_url: "+api.URL+"\n  hosts: ["+srv.Host()+"]\npr:\n  labels: [tpu]\n"), 0o644)
	t.Setenv("GITHUB_TOKEN", token)

	io, out, errOut := deliveryStreams()
	code := run([]string{"migrate", "--target", "tpu", "--pr", "--config", ops, "--color", "never", url}, io)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	subjects := gittest.Git(t, bare, "log", "--format=%s", "main..pallasify/tpu-migration")
	if !strings.Contains(subjects, "pallasify: rewrite CUDA device code for TPU") || !strings.Contains(subjects, "pallasify: add the migration report") {
		t.Errorf("commits:\n%s", subjects)
	}
	train := gittest.Git(t, bare, "show", "pallasify/tpu-migration:train.py")
	if strings.Contains(train, `"cuda"`) {
		t.Errorf("train.py still names cuda:\n%s", train)
	}
	prs := api.PRs()
	if len(prs) != 1 || !prs[0].Draft || strings.Join(prs[0].Labels, ",") != "tpu" || !strings.Contains(prs[0].Body, "pallasify migrate "+url) {
		t.Fatalf("prs %+v", prs)
	}
	if !strings.Contains(errOut.String(), "pull request #1 created") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
	for _, s := range []string{out.String(), errOut.String(), prs[0].Body} {
		if strings.Contains(s, token) {
			t.Fatal("token leaked")
		}
	}
	// A second run finds the branch up to date and the PR unchanged.
	io, out, errOut = deliveryStreams()
	if code := run([]string{"migrate", "--target", "tpu", "--pr", "--config", ops, url}, io); code != 0 {
		t.Fatalf("second run exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), token) {
		t.Fatal("token leaked in the second run")
	}
	if len(api.PRs()) != 1 || !strings.Contains(errOut.String(), "already holds this change") {
		t.Errorf("second run: %s", errOut.String())
	}
	if srv.Seen(token) || len(srv.Passwords) > 0 {
		t.Fatalf("the plain-http git host received credentials:\n%s", strings.Join(srv.Raw, "\n"))
	}
}

// TestTokenNeverLeavesItsHost is the security reviewer's test: with
// GITHUB_TOKEN set, a dry run and a batch over URLs on a plain git HTTP
// server send it nothing (every request is grepped for the token), and --pr
// on a checkout whose remote is not GitHub is refused before any request,
// to the git host or to the fake GitHub.
func TestTokenNeverLeavesItsHost(t *testing.T) {
	root := t.TempDir()
	gittest.NewRemote(t, root, "acme/repo", gittest.Sources(2))
	gittest.NewRemote(t, root, "acme/other", gittest.Sources(3))
	const token = "ghp_securityReviewToken0123456789"
	api := ghtest.New(t, token)
	srv := gittest.ServeOpenHTTPBackend(t, root)
	t.Setenv("GITHUB_TOKEN", token)
	ops := filepath.Join(t.TempDir(), "ops.yaml")
	os.WriteFile(ops, []byte("github:\n  api_url: "+api.URL+"\n"), 0o644)

	io, out, errOut := deliveryStreams()
	if code := run([]string{"migrate", "--config", ops, "--kernels=false", srv.URL + "/acme/repo.git"}, io); code != 0 {
		t.Fatalf("dry run of an http URL: exit %d\n%s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "torch") {
		t.Errorf("dry run printed no diff:\n%s", out.String())
	}
	list := filepath.Join(t.TempDir(), "repos.txt")
	os.WriteFile(list, []byte(srv.URL+"/acme/repo.git\n"+srv.URL+"/acme/other.git\n"), 0o644)
	io, _, errOut = deliveryStreams()
	if code := run([]string{"batch", list, "--config", ops, "--run-dir", filepath.Join(t.TempDir(), "run")}, io); code != 0 {
		t.Fatalf("batch over http URLs: exit %d\n%s", code, errOut.String())
	}

	// --pr on a local checkout whose origin is that plain git host.
	work := t.TempDir()
	gittest.Git(t, work, "clone", "-q", filepath.Join(root, "acme", "repo.git"), "co")
	co := filepath.Join(work, "co")
	gittest.Git(t, co, "remote", "set-url", "origin", srv.URL+"/acme/repo.git")
	before, apiBefore := srv.Requests, len(api.Requests())
	io, _, errOut = deliveryStreams()
	code := run([]string{"migrate", "--config", ops, "--kernels=false", "--pr", co}, io)
	if code != 2 || !strings.Contains(errOut.String(), "--pr needs a GitHub remote") {
		t.Fatalf("--pr on a non-GitHub remote: exit %d\n%s", code, errOut.String())
	}
	if srv.Requests != before || len(api.Requests()) != apiBefore {
		t.Errorf("--pr on a non-GitHub remote made requests (git %d, api %d)", srv.Requests-before, len(api.Requests())-apiBefore)
	}
	if srv.Requests == 0 {
		t.Fatal("the git server saw no request: the test proves nothing")
	}
	if srv.Seen(token) || len(srv.Passwords) > 0 {
		t.Fatalf("the plain git host received the token:\n%s", strings.Join(srv.Raw, "\n"))
	}
}

// Ctrl-C (the command's context cancelled) stops a large run at once with
// one line and exit 130, and leaves neither the --out directory nor the
// --patch file behind.
func TestMigrateInterruptedLeavesNothing(t *testing.T) {
	tree := t.TempDir()
	for i := range 4000 {
		p := filepath.Join(tree, fmt.Sprintf("pkg%02d", i%40), fmt.Sprintf("m%04d.py", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("import torch\n\ndef f%d(x):\n    return x.cuda() + torch.zeros(1, device=\"cuda\")\n", i)), 0o644)
	}
	out := filepath.Join(t.TempDir(), "migrated")
	patch := filepath.Join(t.TempDir(), "tpu.patch")
	io, stdout, stderr := deliveryStreams()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	cmd := newMigrateCmd(io, nil)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetOut(io.Out)
	cmd.SetErr(io.ErrOut)
	cmd.SetArgs([]string{"--kernels=false", "--out", out, "--patch", patch, tree})
	err := cmd.ExecuteContext(ctx)
	if dl, _ := ctx.Deadline(); time.Since(dl) > 3*time.Second {
		t.Errorf("the run went on %s after the interrupt", time.Since(dl))
	}
	if exitCodeOf(err) != 130 || err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v (exit %d); want one 'interrupted' line, exit 130", err, exitCodeOf(err))
	}
	if stdout.Len() > 0 || strings.Count(stderr.String(), "\n") > 1 {
		t.Errorf("output after an interrupt:\nstdout %.300s\nstderr %.300s", stdout.String(), stderr.String())
	}
	for _, p := range []string{out, patch} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
}
