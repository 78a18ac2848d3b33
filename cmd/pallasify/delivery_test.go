package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
)

func deliveryStreams() (*streams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

func TestConfigValidateCmd(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pallasify.yaml")
	os.WriteFile(good, []byte("target: tpu\npr:\n  labels: [tpu]\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("target: tpu\nbranch:\n  prefixx: x\n"), 0o644)
	ops := filepath.Join(dir, "ops.yaml")
	os.WriteFile(ops, []byte("github:\n  token_env: BOT_TOKEN\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"config", "validate", good}, 0, "pallasify.yaml: ok"},
		{[]string{"config", "validate", bad}, 1, "bad.yaml:3: error: field prefixx not found"},
		{[]string{"config", "validate", ops}, 0, "ops.yaml:2: warning: github: ignored"},
		{[]string{"config", "validate", "--operator", ops}, 0, "ops.yaml: ok"},
		{[]string{"config", "validate", filepath.Join(dir, "missing.yaml")}, 2, ""},
		{[]string{"config", "show", good}, 0, "target: tpu"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[1:], " "), func(t *testing.T) {
			io, out, _ := deliveryStreams()
			if code := run(c.args, io); code != c.code {
				t.Fatalf("exit %d, want %d; out:\n%s", code, c.code, out.String())
			}
			if !strings.Contains(out.String(), c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out.String())
			}
		})
	}
}

func TestBatchCmdResume(t *testing.T) {
	root := t.TempDir()
	var list strings.Builder
	for i := 1; i <= 3; i++ {
		bare := gittest.NewRemote(t, root, "acme/r"+string(rune('0'+i)), gittest.Sources(i))
		list.WriteString("file://" + bare + "\n")
	}
	list.WriteString("file://" + filepath.Join(root, "acme", "nope.git") + "\n")
	listPath := filepath.Join(t.TempDir(), "repos.txt")
	os.WriteFile(listPath, []byte(list.String()), 0o644)
	runDir := filepath.Join(t.TempDir(), "run")
	const token = "ghp_cmdBatchToken0123456789abcd"
	getenv := func(k string) string {
		if k == "GITHUB_TOKEN" {
			return token
		}
		return ""
	}
	io, out, errOut := deliveryStreams()
	opts := &batchOptions{IO: io, List: listPath, RunDir: runDir, Push: true, Migrate: func(ctx context.Context, root string, _ *config.Config) (*pipeline.Run, error) {
		return gittest.Migrate(ctx, root)
	}, Getenv: getenv}
	err := batchRun(context.Background(), opts)
	if exitCodeOf(err) != 1 || !strings.Contains(err.Error(), "1 of 4 repositories failed") {
		t.Fatalf("err %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "4 repositories: 3 done, 1 failed") || !strings.Contains(errOut.String(), `"msg":"repo done"`) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	gittest.Git(t, filepath.Join(root, "acme", "r2.git"), "rev-parse", "--verify", "pallasify/tpu-migration")
	io, out, errOut = deliveryStreams()
	opts.IO = io
	err = batchRun(context.Background(), opts)
	if exitCodeOf(err) != 1 || !strings.Contains(out.String(), "4 skipped as already handled") {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String()+errOut.String(), token) {
		t.Error("token in output")
	}
}

func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exitError); ok {
		return ee.code
	}
	return 2
}
