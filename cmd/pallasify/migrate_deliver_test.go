package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/gh/ghtest"
)

// TestMigrateGitURLPushPR runs `pallasify migrate <git URL> --pr` end to end
// with the real rule set: clone (depth 1), migrate, one commit per family,
// push, and a draft PR on a fake GitHub.
func TestMigrateGitURLPushPR(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(1))
	const token = "ghp_cliMigrateToken0123456789ab"
	api := ghtest.New(t, token)
	api.AddRepo(ghtest.Repo{Owner: "acme", Name: "train", CanPush: true})
	ops := filepath.Join(t.TempDir(), "ops.yaml")
	os.WriteFile(ops, []byte("github:\n  api_url: "+api.URL+"\npr:\n  labels: [tpu]\n"), 0o644)
	t.Setenv("GITHUB_TOKEN", token)

	io, out, errOut := deliveryStreams()
	code := run([]string{"migrate", "--target", "tpu", "--pr", "--config", ops, "--color", "never", "file://" + bare}, io)
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
	if len(prs) != 1 || !prs[0].Draft || strings.Join(prs[0].Labels, ",") != "tpu" || !strings.Contains(prs[0].Body, "pallasify migrate file://") {
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
	if code := run([]string{"migrate", "--target", "tpu", "--pr", "--config", ops, "file://" + bare}, io); code != 0 {
		t.Fatalf("second run exit %d: %s", code, errOut.String())
	}
	if len(api.PRs()) != 1 || !strings.Contains(errOut.String(), "already holds this change") {
		t.Errorf("second run: %s", errOut.String())
	}
}
