package files_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/files"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the want files")

// run checks one file for a target, then the invariants every result
// holds: a second pass over the output (and over the new file) changes
// nothing.
func run(t *testing.T, rules []*files.Rule, target rule.Target, rel string, src []byte, exists func(string) bool) files.Result {
	t.Helper()
	opts := files.Options{Target: target, Exists: exists}
	res := files.Check(context.Background(), rules, opts, rel, src)
	out := src
	if res.Output != nil {
		out = res.Output
	}
	again := files.Options{Target: target, Exists: func(p string) bool {
		return (res.New != nil && p == res.New.Path) || (exists != nil && exists(p))
	}}
	if r2 := files.Check(context.Background(), rules, again, rel, out); r2.Output != nil || r2.New != nil {
		t.Errorf("%s %s: second pass changed the output:\n%s", rel, target, ruletest.Diff(out, r2.Output))
	}
	if res.New != nil {
		if r2 := files.Check(context.Background(), rules, again, res.New.Path, res.New.Content); r2.Output != nil || r2.New != nil {
			t.Errorf("%s %s: second pass changed the new file %s:\n%s", rel, target, res.New.Path, ruletest.Diff(res.New.Content, r2.Output))
		}
	}
	return res
}

func findingsText(res files.Result) string {
	var b strings.Builder
	if res.Problem != nil {
		fmt.Fprintf(&b, "%d %s %s\n", res.Problem.Line, res.Problem.Code, res.Problem.Message)
	}
	for _, f := range res.Findings {
		state := "reported"
		switch {
		case f.Applied:
			state = "fixed"
		case f.Skipped != "":
			state = "skipped (" + f.Skipped + ")"
		}
		fmt.Fprintf(&b, "%d:%d %s %s: %s\n", f.Line, f.Col, f.Code, state, f.Message)
	}
	return b.String()
}

// TestGolden runs the family over every case under testdata/: a case holds
// input/<path> (the path picks the kind) and, per target, want.<target>/
// with every file the run changes or creates (none: no change) and
// want.<target>.findings.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		dir := filepath.Join("testdata", c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			inputs := map[string][]byte{}
			in := filepath.Join(dir, "input")
			err := filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				rel, _ := filepath.Rel(in, p)
				inputs[filepath.ToSlash(rel)] = b
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			exists := func(p string) bool { _, ok := inputs[p]; return ok }
			for _, target := range rule.Targets {
				got := map[string][]byte{}
				var report strings.Builder
				for _, rel := range slices.Sorted(maps.Keys(inputs)) {
					res := run(t, files.Rules, target, rel, inputs[rel], exists)
					if res.Output != nil {
						got[rel] = res.Output
					}
					if res.New != nil {
						got[res.New.Path] = res.New.Content
					}
					if s := findingsText(res); s != "" {
						report.WriteString("== " + rel + "\n" + s)
					}
				}
				wantDir := filepath.Join(dir, "want."+string(target))
				wantFindings := filepath.Join(dir, "want."+string(target)+".findings")
				if *update {
					os.RemoveAll(wantDir)
					for rel, b := range got {
						p := filepath.Join(wantDir, filepath.FromSlash(rel))
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(p, b, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					if err := os.WriteFile(wantFindings, []byte(report.String()), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want := map[string][]byte{}
				_ = filepath.WalkDir(wantDir, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return nil
					}
					b, _ := os.ReadFile(p)
					rel, _ := filepath.Rel(wantDir, p)
					want[filepath.ToSlash(rel)] = b
					return nil
				})
				for rel, w := range want {
					if string(got[rel]) != string(w) {
						t.Errorf("%s: %s differs:\n%s", target, rel, ruletest.Diff(w, got[rel]))
					}
				}
				for rel := range got {
					if _, ok := want[rel]; !ok {
						t.Errorf("%s: %s changed or created; no want file", target, rel)
					}
				}
				wf, _ := os.ReadFile(wantFindings)
				if string(wf) != report.String() {
					t.Errorf("%s: findings differ:\n%s", target, ruletest.Diff(wf, []byte(report.String())))
				}
			}
		})
	}
}

// TestDocs runs every rule's documented example alone for both targets:
// the outputs are the Example's, the doc shows them, the example raises
// the rule's code, a second pass changes nothing.
func TestDocs(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range files.Rules {
		t.Run(r.Code, func(t *testing.T) {
			if seen[r.Code] || !strings.HasPrefix(r.Code, "PNF") || len(r.Code) != 6 {
				t.Errorf("code %q duplicate or not PNF plus three digits", r.Code)
			}
			seen[r.Code] = true
			for _, s := range []string{"## What it does", "## Why", "## Example", "## Fix safety"} {
				if !strings.Contains(r.Doc, "\n"+s+"\n") {
					t.Errorf("doc lacks %q", s)
				}
			}
			if !strings.Contains(r.Doc, strings.TrimRight(r.Example.Before, "\n")) {
				t.Errorf("doc does not show the example")
			}
			for _, c := range []struct {
				target rule.Target
				want   files.Output
			}{{rule.Portable, r.Example.Portable}, {rule.TPU, r.Example.TPU}} {
				res := run(t, []*files.Rule{r}, c.target, r.Example.Path, []byte(r.Example.Before), nil)
				own := 0
				for _, f := range res.Findings {
					if f.Code == r.Code {
						own++
					}
				}
				if own == 0 || res.Problem != nil {
					t.Errorf("%s: the example raises no %s finding (problem %v)", c.target, r.Code, res.Problem)
				}
				var got files.Output
				switch {
				case res.Output != nil:
					got = files.Output{Path: r.Example.Path, Text: string(res.Output)}
				case res.New != nil:
					got = files.Output{Path: res.New.Path, Text: string(res.New.Content)}
				}
				if got != c.want {
					t.Errorf("%s: example output %q:\n%s\nwant %q:\n%s", c.target, got.Path, got.Text, c.want.Path, c.want.Text)
				}
				if c.want.Text != "" && !strings.Contains(r.Doc, strings.TrimRight(c.want.Text, "\n")) {
					t.Errorf("%s: the doc does not show the example output", c.target)
				}
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	cases := map[string]files.Kind{
		"requirements.txt": files.Requirements, "requirements-dev.txt": files.Requirements, "sub/constraints.txt": files.Requirements,
		"requirements/base.txt": files.Requirements, "requirements.in": files.Requirements, "notes.txt": "",
		"pyproject.toml": files.Pyproject, "setup.cfg": files.SetupCfg, "pkg/setup.py": files.SetupPy, "train.py": "",
		"docker/Dockerfile": files.Dockerfile, "Dockerfile.gpu": files.Dockerfile, "x.dockerfile": files.Dockerfile,
		"scripts/run.sh": files.Shell, ".github/workflows/ci.yml": files.CI, "sub/.github/workflows/ci.yaml": files.CI,
		".lightning/workflows/tests.yaml": files.CI, "configs/a.yaml": files.YAML, "environment.yml": files.YAML,
		"a.json": files.JSON, "ruff.toml": files.TOML, "x.ipynb": "", "README.md": "",
	}
	for p, want := range cases {
		if got := files.KindOf(p); got != want {
			t.Errorf("KindOf(%q) = %q; want %q", p, got, want)
		}
	}
}

// TestBadInput: a config that does not parse as its format is reported
// (PIO001, with the parser's line) and left untouched; one holding none of
// the rules' needles is not parsed at all.
func TestBadInput(t *testing.T) {
	cases := []struct {
		path, src string
		line      int
	}{
		{"c.yaml", "device: cuda\n  bad: [\n", 2},
		{"c.json", "{\"device\": \"cuda\",\n\"x\": }\n", 2},
		{"pyproject.toml", "[project]\ndependencies = [\"torch\"\nx = \n", 3},
		{"env.toml", "device = \"cuda\"\n[[\n", 3},
	}
	for _, c := range cases {
		for _, target := range rule.Targets {
			res := files.Check(context.Background(), files.Rules, files.Options{Target: target}, c.path, []byte(c.src))
			if res.Problem == nil || res.Problem.Code != "PIO001" || res.Output != nil || len(res.Findings) > 0 {
				t.Errorf("%s %s: got %+v; want PIO001 and nothing else", c.path, target, res)
				continue
			}
			if res.Problem.Line != c.line {
				t.Errorf("%s: problem at line %d; want %d (%s)", c.path, res.Problem.Line, c.line, res.Problem.Message)
			}
		}
	}
	// JSON with comments and trailing commas (devcontainer.json) parses; a
	// commented-out entry is no finding.
	jc := "{\n  // \"device\": \"cuda\",\n  \"device\": \"cuda\", /* gpu */\n  \"runArgs\": [\"a\",],\n}\n"
	res := files.Check(context.Background(), files.Rules, files.Options{Target: rule.TPU}, ".devcontainer/devcontainer.json", []byte(jc))
	if res.Problem != nil || len(res.Findings) != 1 || res.Findings[0].Line != 3 {
		t.Errorf("JSONC: got %+v; want one finding, at line 3", res)
	}
	res = files.Check(context.Background(), files.Rules, files.Options{Target: rule.TPU}, "t.yaml", []byte("{{ template }}\n"))
	if res.Problem != nil {
		t.Errorf("a YAML file holding no needle was parsed: %+v", res.Problem)
	}
}
