package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/transforms/llm/llmtest"
	"github.com/pallasify/pallasify/transforms/rule"
)

// matmulProject is a tree with one CUDA kernel the rules refuse (a tiled
// matmul): only an LLM can draft it.
func matmulProject(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "kernels", "matmul_tiled", "kernel.cu"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "csrc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "csrc", "matmul.cu"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "train.py"), []byte("x = \"cuda\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func runMigrateLLM(t *testing.T, root string, env map[string]string, args ...string) string {
	t.Helper()
	io, out, errOut := testStreams()
	cmd := newMigrateCmd(io, func(ctx context.Context, o *migrateOptions) error {
		o.Rules, o.Getenv = []*rule.Rule{testRule}, func(k string) string { return env[k] }
		return migrateRun(ctx, o)
	})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetOut(io.Out)
	cmd.SetErr(io.ErrOut)
	cmd.SetArgs(append(append([]string{}, args...), root))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, errOut)
	}
	return out.String()
}

func needVenv(t *testing.T) {
	t.Helper()
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		py, _ = filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "python"))
		t.Setenv("PALLASIFY_PYTHON", py)
	}
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("PALLASIFY_REQUIRE_STACK is set but there is no Python venv (make venv)")
		}
		t.Skip("no Python venv (make venv)")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // verdict and LLM caches of this test only
}

func TestMigrateNoEndpointReportsNeedsLLM(t *testing.T) {
	needVenv(t)
	out := runMigrateLLM(t, matmulProject(t), nil)
	for _, want := range []string{"needs-llm", llm.EnvBaseURL, "needs-llm: 1 kernels;"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestMigrateWithScriptedLLM(t *testing.T) {
	needVenv(t)
	root := matmulProject(t)
	srv := llmtest.New(t, filepath.Join("..", ".."), llmtest.Load(t, filepath.Join("..", ".."), "migrate_matmul"))
	env := map[string]string{llm.EnvBaseURL: srv.URL(), llm.EnvModel: "scripted"}
	out := runMigrateLLM(t, root, env, "--target", "tpu")
	for _, want := range []string{"matmul_tiled_kernel: llm draft proven after 2 rounds, 300 tokens, 2 calls",
		"LLM total: 2 calls, 300 tokens; 1 of 1 drafted kernels proven"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d LLM requests, want 2", n)
	}
	if fb := srv.Requests()[1].LastUser(); !strings.Contains(fb, "no keyword argument 'grid_size'") {
		t.Errorf("the gate's rejection was not fed back:\n%s", fb)
	}
	// A re-run of the unchanged tree makes no call: the same conversation, every reply from the cache.
	srv.Reset(llmtest.Script{})
	out = runMigrateLLM(t, root, env, "--target", "tpu")
	if n := len(srv.Requests()); n != 0 || !strings.Contains(out, "llm draft proven") {
		t.Errorf("re-run made %d requests:\n%s", n, out)
	}
}

func TestDoctorLLMCheck(t *testing.T) {
	tests := []struct {
		env    map[string]string
		status string
		detail string
	}{
		{nil, "info", "not configured"},
		{map[string]string{llm.EnvBaseURL: "http://localhost:11434/v1", llm.EnvModel: "qwen"}, "ok", "http://localhost:11434/v1 model qwen (no key)"},
		{map[string]string{llm.EnvKey: "sk-secret", llm.EnvModel: "gpt"}, "ok", "https://api.openai.com/v1 model gpt (key from $OPENAI_API_KEY)"},
		{map[string]string{llm.EnvBaseURL: "nope"}, "warn", "base URL"},
	}
	for _, tt := range tests {
		c := llmCheck(func(k string) string { return tt.env[k] })
		if c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) || strings.Contains(c.Detail, "sk-secret") {
			t.Errorf("%v: %+v", tt.env, c)
		}
	}
}
