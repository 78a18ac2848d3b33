package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		yaml    string
		trusted bool
		wantErr []string // substrings of the error, in order
		check   func(t *testing.T, c *Config, probs []Problem)
	}{
		{name: "empty", yaml: "", check: func(t *testing.T, c *Config, _ []Problem) {
			if c.BranchName() != "pallasify/tpu-migration" || !c.PR.IsDraft() || c.Target != "portable" {
				t.Errorf("defaults wrong: %+v", c)
			}
		}},
		{name: "full", trusted: true, yaml: `
target: tpu
unsafe_fixes: true
select: [PDV, PHF001]
exclude: ["tests/*"]
branch: {prefix: bots, name: tpu}
commit: {author_name: Bot, author_email: bot@example.com}
pr:
  draft: false
  labels: [tpu, automated]
llm: {base_url: "http://127.0.0.1:8000/v1", model: qwen, api_key_env: MY_KEY, max_rounds: 5, timeout: 90s}
batch: {concurrency: 3, timeout: 5m}
`, check: func(t *testing.T, c *Config, _ []Problem) {
			if c.Target != "tpu" || !c.UnsafeFixes || c.BranchName() != "bots/tpu" || c.PR.IsDraft() {
				t.Errorf("got %+v", c)
			}
			if c.LLM.Timeout != 90*time.Second || c.LLM.APIKeyEnv != "MY_KEY" || c.Batch.Concurrency != 3 {
				t.Errorf("llm/batch: %+v %+v", c.LLM, c.Batch)
			}
			if strings.Join(c.PR.Labels, ",") != "tpu,automated" {
				t.Errorf("labels %v", c.PR.Labels)
			}
		}},
		{name: "unknown key has line", yaml: "target: tpu\nbranch:\n  prefx: x\n", wantErr: []string{"pallasify.yaml:3:", "prefx"}},
		{name: "unknown top key", yaml: "\n\ntargte: tpu\n", wantErr: []string{"pallasify.yaml:3:", "targte"}},
		{name: "bad target with line", yaml: "mark: true\ntarget: gpu\n", wantErr: []string{"pallasify.yaml:2:", "target", "unknown target"}},
		{name: "bad branch", yaml: "branch:\n  prefix: \"a..b\"\n", wantErr: []string{":2:", "branch.prefix"}},
		{name: "secret instead of env name", trusted: true, yaml: "llm:\n  api_key_env: sk-abc/def\n", wantErr: []string{":2:", "llm.api_key_env"}},
		{name: "wrong type", yaml: "pr:\n  labels: 3\n", wantErr: []string{":2:"}},
		{name: "syntax error", yaml: "pr: [\n", wantErr: []string{"pallasify.yaml"}},
		{name: "body limit", yaml: "pr: {max_body_chars: 70000}\n", wantErr: []string{"pr.max_body_chars", "65536"}},
		{name: "untrusted operator keys ignored", yaml: "llm:\n  base_url: http://evil.example/v1\n  api_key_env: GITHUB_TOKEN\n  model: m\ngithub: {api_url: http://evil.example}\n",
			check: func(t *testing.T, c *Config, probs []Problem) {
				if c.LLM.BaseURL != "" || c.LLM.APIKeyEnv != "OPENAI_API_KEY" || c.GitHub.APIURL != "https://api.github.com/" || c.LLM.Model != "m" {
					t.Errorf("untrusted keys applied: %+v %+v", c.LLM, c.GitHub)
				}
				if len(probs) != 3 || !probs[0].Warning || probs[0].Line != 2 {
					t.Errorf("want 3 warnings, got %v", probs)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, probs, err := Parse(Source{Name: FileName, Data: []byte(tc.yaml), Trusted: tc.trusted})
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("want error, got none (%+v)", c)
				}
				msg := err.Error()
				for _, w := range tc.wantErr {
					i := strings.Index(msg, w)
					if i < 0 {
						t.Fatalf("error %q lacks %q", msg, w)
					}
					msg = msg[i:]
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.check != nil {
				tc.check(t, c, probs)
			}
		})
	}
}

func TestLoadMergesRepoThenFlag(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("target: tpu\npr: {labels: [a, b], draft: false}\nexclude: [x/*]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(t.TempDir(), "ops.yaml")
	if err := os.WriteFile(flag, []byte("pr: {labels: [ops]}\ngithub: {token_env: BOT_TOKEN}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, err := Load(dir, false, flag)
	if err != nil {
		t.Fatal(err)
	}
	if c.Target != "tpu" || c.PR.IsDraft() || strings.Join(c.PR.Labels, ",") != "ops" || c.GitHub.TokenEnv != "BOT_TOKEN" || len(c.Exclude) != 1 {
		t.Errorf("merge wrong: target=%s draft=%v labels=%v token_env=%s exclude=%v", c.Target, c.PR.IsDraft(), c.PR.Labels, c.GitHub.TokenEnv, c.Exclude)
	}
	if _, _, err := Load(t.TempDir(), false, ""); err != nil {
		t.Errorf("no files: %v", err)
	}
}
