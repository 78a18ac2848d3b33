package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pyproject is a pyproject.toml with other tools' tables around pallasify's.
const pyproject = `[project]
name = "demo"
dependencies = ["torch"]

[tool.ruff]
line-length = 100

[tool.pallasify]
target = "tpu"
unsafe_fixes = true
select = ["PDV", "PHF001"]
exclude = ["tests/*"]
branch = { prefix = "bots", name = "tpu" }
commit.author_name = "Bot"
commit.author_email = "bot@example.com"

[tool.pallasify.pr]
draft = false
labels = ["tpu", "automated"]

[tool.pallasify.llm]
model = "qwen"
max_rounds = 5
timeout = "90s"

[tool.black]
target-version = ["py311"]
`

const sameYAML = `
target: tpu
unsafe_fixes: true
select: [PDV, PHF001]
exclude: ["tests/*"]
branch: {prefix: bots, name: tpu}
commit: {author_name: Bot, author_email: bot@example.com}
pr:
  draft: false
  labels: [tpu, automated]
llm: {model: qwen, max_rounds: 5, timeout: 90s}
`

// TestPyprojectSameAsYAML: [tool.pallasify] sets the keys pallasify.yaml
// sets, to the same values.
func TestPyprojectSameAsYAML(t *testing.T) {
	src, ok, err := Pyproject(PyprojectName, []byte(pyproject), false)
	if err != nil || !ok {
		t.Fatalf("Pyproject: ok=%v err=%v", ok, err)
	}
	got, probs, err := Parse(src)
	if err != nil || len(probs) != 0 {
		t.Fatalf("Parse: %v %v\n%s", err, probs, src.Data)
	}
	want, _, err := Parse(Source{Name: FileName, Data: []byte(sameYAML)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pyproject gives\n%+v\nyaml gives\n%+v", got, want)
	}
	if got.LLM.Timeout != 90*time.Second || got.BranchName() != "bots/tpu" || got.PR.IsDraft() {
		t.Errorf("values: %+v", got)
	}
}

// TestPyprojectProblemsHaveTOMLLines: unknown keys, wrong types and bad
// values are errors at their line of pyproject.toml, as in pallasify.yaml.
func TestPyprojectProblemsHaveTOMLLines(t *testing.T) {
	cases := []struct {
		name, toml string
		want       []string // substrings of the error, in order
	}{
		{"unknown top key", "[project]\nname = 'x'\n\n[tool.pallasify]\ntarget = \"tpu\"\ntargte = \"tpu\"\n", []string{"pyproject.toml:6:", "targte"}},
		{"unknown key in a sub-table", "[tool.pallasify]\nmark = true\n\n[tool.pallasify.branch]\nprefx = \"x\"\n", []string{"pyproject.toml:5:", "prefx"}},
		{"unknown key in an inline table", "[tool.pallasify]\nmark = true\npr = { title = \"t\",\n  lables = [\"a\"] }\n", []string{"pyproject.toml:4:", "lables"}},
		{"unknown dotted key", "[tool]\npallasify.mark = true\npallasify.branch.prefx = \"x\"\n", []string{"pyproject.toml:3:", "prefx"}},
		{"wrong type", "[tool.pallasify]\nmark = true\n\n[tool.pallasify.pr]\nlabels = 3\n", []string{"pyproject.toml:5:"}},
		{"bad value", "[tool.pallasify]\nmark = true\ntarget = \"gpu\"\n", []string{"pyproject.toml:3:", "target", "unknown target"}},
		{"bad nested value", "[tool.pallasify]\n\n[tool.pallasify.pr]\nmax_body_chars = 70000\n", []string{"pyproject.toml:4:", "pr.max_body_chars"}},
		{"not a table", "[tool]\npallasify = 3\n", []string{"pyproject.toml:2:", "must be a table"}},
		{"not TOML", "[tool.pallasify]\ntarget = \"tpu\"\nmark = \n", []string{"pyproject.toml:3:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, ok, err := Pyproject(PyprojectName, []byte(tc.toml), false)
			if err == nil {
				if !ok {
					t.Fatal("no table found")
				}
				_, _, err = Parse(src)
			}
			if err == nil {
				t.Fatalf("want an error, got none (yaml:\n%s)", src.Data)
			}
			msg := err.Error()
			for _, w := range tc.want {
				i := strings.Index(msg, w)
				if i < 0 {
					t.Fatalf("error %q lacks %q", err.Error(), w)
				}
				msg = msg[i:]
			}
		})
	}
}

// TestPyprojectTrustRule: a repository's pyproject.toml may not set the
// operator's keys either: warnings at their TOML lines, values ignored.
func TestPyprojectTrustRule(t *testing.T) {
	data := "[tool.pallasify]\ntarget = \"tpu\"\nllm.base_url = \"http://evil.example/v1\"\n\n[tool.pallasify.github]\napi_url = \"https://evil.example\"\n[tool.pallasify.batch]\nconcurrency = 9\n"
	src, ok, err := Pyproject(PyprojectName, []byte(data), false)
	if err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	c, probs, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.BaseURL != "" || c.GitHub.APIURL != "https://api.github.com/" || c.Batch.Concurrency != 4 || c.Target != "tpu" {
		t.Errorf("untrusted keys applied: %+v %+v %+v", c.LLM, c.GitHub, c.Batch)
	}
	var lines []int
	for _, p := range probs {
		if !p.Warning || p.File != PyprojectName {
			t.Errorf("want a warning about %s, got %v", PyprojectName, p)
		}
		lines = append(lines, p.Line)
	}
	if !reflect.DeepEqual(lines, []int{3, 6, 8}) {
		// a table's line is its first key's, as for pallasify.yaml's block mappings
		t.Errorf("warning lines %v, want [3 6 8] (%v)", lines, probs)
	}
	// The operator's own pyproject (trusted) may.
	src.Trusted = true
	if c, _, err := Parse(src); err != nil || c.Batch.Concurrency != 9 || c.GitHub.APIURL != "https://evil.example" {
		t.Errorf("trusted: err=%v %+v", err, c)
	}
}

func TestPyprojectWithoutTable(t *testing.T) {
	for _, data := range []string{"[project]\nname = \"x\"\n", "[project]\nname = \"pallasify\"\n", "[tool.pallasify-extra]\nx = 1\n", "not toml ["} {
		if _, ok, err := Pyproject(PyprojectName, []byte(data), false); ok || err != nil {
			t.Errorf("%q: ok=%v err=%v, want neither", data, ok, err)
		}
	}
	// An empty table is a config (all defaults).
	src, ok, err := Pyproject(PyprojectName, []byte("[tool.pallasify]\n"), false)
	if err != nil || !ok {
		t.Fatalf("empty table: ok=%v err=%v", ok, err)
	}
	if c, _, err := Parse(src); err != nil || c.Target != "portable" {
		t.Errorf("empty table: %v %+v", err, c)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDiscover: the closest directory, from PATH up to the repository's
// root (the directory holding .git), with pallasify.yaml or a pyproject.toml
// that has [tool.pallasify]; pallasify.yaml wins in one directory.
func TestDiscover(t *testing.T) {
	top := t.TempDir()
	write(t, filepath.Join(top, PyprojectName), "[tool.pallasify]\ntarget = \"tpu\"\n") // above the repository
	repo := filepath.Join(top, "repo")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	pkg := filepath.Join(repo, "src", "pkg")
	write(t, filepath.Join(pkg, "model.py"), "import torch\n")
	write(t, filepath.Join(repo, "src", PyprojectName), "[project]\nname = \"x\"\n") // no table: skipped

	check := func(path, want string) {
		t.Helper()
		got, err := Discover(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Discover(%s) = %q, want %q", path, got, want)
		}
	}
	check(pkg, "") // stops at the .git boundary: top's file is not the repository's
	write(t, filepath.Join(repo, PyprojectName), "[project]\nname = \"x\"\n\n[tool.pallasify]\nmark = true\n")
	check(pkg, filepath.Join(repo, PyprojectName))
	check(filepath.Join(pkg, "model.py"), filepath.Join(repo, PyprojectName))
	write(t, filepath.Join(repo, FileName), "target: tpu\n")
	check(pkg, filepath.Join(repo, FileName)) // pallasify.yaml wins in one directory
	write(t, filepath.Join(pkg, PyprojectName), "[tool.pallasify]\n")
	check(pkg, filepath.Join(pkg, PyprojectName)) // the closest wins
	check(top, filepath.Join(top, PyprojectName))

	// Load (bot, batch: the repository's root only) reads pyproject.toml too.
	os.Remove(filepath.Join(repo, FileName))
	c, _, err := Load(repo, false, "")
	if err != nil || !c.Mark {
		t.Errorf("Load: err=%v mark=%v", err, c != nil && c.Mark)
	}
	c, _, err = LoadFile(filepath.Join(repo, PyprojectName), "repo/pyproject.toml", true, "")
	if err != nil || !c.Mark {
		t.Errorf("LoadFile: err=%v", err)
	}
}
