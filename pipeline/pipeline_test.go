package pipeline

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// deviceRule rewrites torch.device("cuda") to torch.device("tpu"); it is the
// pipeline tests' stand-in for the registry, so these tests do not depend on
// the real rules' output.
var deviceRule = &rule.Rule{
	Code: "PTT001", Name: "test-device", Doc: "Test device rule.", Safety: rule.Safe, Needles: []string{`"cuda"`},
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "string" && p.Text(n) == `"cuda"` {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "cuda device string",
					Fix: &rule.Fix{Title: "name the tpu", Edits: []rule.Edit{{Start: int(n.StartByte()), End: int(n.EndByte()), New: `"tpu"`}}}})
			}
			return true
		})
	},
}

// eventRule is diagnostic-only.
var eventRule = &rule.Rule{
	Code: "PTT002", Name: "test-event", Doc: "Test event rule.", Safety: rule.DisplayOnly, Needles: []string{"Event"},
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "attribute" && strings.HasSuffix(p.Text(n), ".Event") {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "CUDA event"})
			}
			return true
		})
	},
}

var testRules = []*rule.Rule{deviceRule, eventRule}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func paths(r *Run, lang string) []string {
	var out []string
	for _, f := range r.Files {
		if lang == "" || f.Lang == lang {
			out = append(out, f.Path)
		}
	}
	return out
}

func TestWalk(t *testing.T) {
	root := writeTree(t, map[string]string{
		"a.py":                         "x = 1\n",
		"pkg/b.py":                     "x = 1\n",
		"pkg/gen_out.py":               "x = 1\n",
		"pkg/.gitignore":               "gen_*.py\n",
		".gitignore":                   "# comment\nbuild/\n*.log\n!keep.log\n",
		"build/c.py":                   "x = 1\n",
		"x.log":                        "",
		"keep.log":                     "",
		".git/config":                  "",
		"node_modules/m/i.py":          "x = 1\n",
		"env/lib/site-packages/s.py":   "x = 1\n",
		"myenv/pyvenv.cfg":             "",
		"myenv/lib/v.py":               "x = 1\n",
		"third/vendor/v.py":            "x = 1\n",
		"tests/test_a.py":              "x = 1\n",
		"docs/conf.py":                 "x = 1\n",
		"deep/a/b/excluded_by_glob.py": "x = 1\n",
	})
	cases := []struct {
		name             string
		include, exclude []string
		want             []string
	}{
		{"defaults", nil, nil, []string{".gitignore", "a.py", "deep/a/b/excluded_by_glob.py", "docs/conf.py", "keep.log", "pkg/.gitignore", "pkg/b.py", "tests/test_a.py"}},
		{"include py", []string{"*.py"}, nil, []string{"a.py", "deep/a/b/excluded_by_glob.py", "docs/conf.py", "pkg/b.py", "tests/test_a.py"}},
		{"exclude dir and glob", nil, []string{"tests", "deep/**/*.py", "*.log"}, []string{".gitignore", "a.py", "docs/conf.py", "pkg/.gitignore", "pkg/b.py"}},
		{"include path glob", []string{"pkg/*.py"}, nil, []string{"pkg/b.py"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ents, err := walkTree(context.Background(), root, c.include, c.exclude)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range ents {
				got = append(got, e.rel)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("walk = %q; want %q", got, c.want)
			}
		})
	}
}

// TestWalkInsideRepo: a root below a git work tree's top honours the
// .gitignore files above it (and .git/info/exclude), anchored at the top.
func TestWalkInsideRepo(t *testing.T) {
	top := writeTree(t, map[string]string{
		".git/info/exclude":   "secret.py\n",
		".gitignore":          "gen/\n/src/pkg/anchored.py\n*.tmp.py\n",
		"src/.gitignore":      "local_*.py\n",
		"src/pkg/a.py":        "x = 1\n",
		"src/pkg/anchored.py": "x = 1\n",
		"src/pkg/x.tmp.py":    "x = 1\n",
		"src/pkg/local_b.py":  "x = 1\n",
		"src/pkg/secret.py":   "x = 1\n",
		"src/pkg/gen/c.py":    "x = 1\n",
		"src/pkg/sub/d.py":    "x = 1\n",
	})
	ents, err := walkTree(context.Background(), filepath.Join(top, "src", "pkg"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.rel)
	}
	if want := []string{"a.py", "sub/d.py"}; !reflect.DeepEqual(got, want) {
		t.Errorf("walk = %q; want %q", got, want)
	}
}

// TestWalkIgnoredRoot: a root the enclosing work tree ignores (make bench's
// .bench/realtree inside this repository) is walked as a tree of its own,
// with its own .gitignore files; before, nothing in it was analysed.
func TestWalkIgnoredRoot(t *testing.T) {
	top := writeTree(t, map[string]string{
		".git/info/exclude":      "",
		".gitignore":             "/.bench/\nbuild/\n",
		".bench/tree/a.py":       "x = 1\n",
		".bench/tree/.gitignore": "skip_*.py\n",
		".bench/tree/skip_b.py":  "x = 1\n",
		".bench/tree/sub/c.py":   "x = 1\n",
		"build/lib/d.py":         "x = 1\n",
	})
	for _, c := range []struct {
		root string
		want []string
	}{
		{filepath.Join(top, ".bench", "tree"), []string{".gitignore", "a.py", "sub/c.py"}},
		{filepath.Join(top, "build", "lib"), []string{"d.py"}},
		{top, []string{".gitignore"}},
	} {
		ents, err := walkTree(context.Background(), c.root, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.rel)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("walk %s = %q; want %q", c.root, got, c.want)
		}
	}
}

func TestPrefilter(t *testing.T) {
	a := &rule.Rule{Code: "A", Needles: []string{"cuda", "nccl"}}
	b := &rule.Rule{Code: "B", Needles: []string{"device_map"}}
	c := &rule.Rule{Code: "C"}
	d := &rule.Rule{Code: "D", Needles: []string{"uda_x"}}
	codes := func(rs []*rule.Rule) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Code)
		}
		return strings.Join(s, ",")
	}
	cases := []struct {
		name  string
		rules []*rule.Rule
		src   string
		want  string
	}{
		{"none", []*rule.Rule{a, b}, "x = 1\n", ""},
		{"first", []*rule.Rule{a, b}, "x.cuda()\n", "A"},
		{"second needle", []*rule.Rule{a, b}, "backend='nccl'", "A"},
		{"both", []*rule.Rule{a, b}, "device_map='auto'; x.cuda()", "A,B"},
		{"always", []*rule.Rule{a, c}, "x = 1", "C"},
		{"overlapping needles", []*rule.Rule{a, d}, "y.cuda_x", "A,D"},
		{"suffix link", []*rule.Rule{d}, "cuuda_x", "D"},
		{"no needles at all", []*rule.Rule{c}, "", "C"},
	}
	for _, tc := range cases {
		got := codes(newPrefilter(tc.rules).selectRules([]byte(tc.src)))
		if got != tc.want {
			t.Errorf("%s: selectRules(%q) = %q; want %q", tc.name, tc.src, got, tc.want)
		}
	}
}

func TestMigrateDeterministicAndPatchApplies(t *testing.T) {
	files := map[string]string{"README.md": "cuda\n"}
	for i := 0; i < 40; i++ {
		files[filepath.ToSlash(filepath.Join("pkg", string(rune('a'+i%26))+strings.Repeat("x", i/26)+".py"))] =
			"import torch\n\n# \"cuda\" in a comment stays\nd = torch.device(\"cuda\")\ne = torch.cuda.Event()\n"
	}
	files["pkg/plain.py"] = "x = 1\n"
	root := writeTree(t, files)
	var last []byte
	for _, conc := range []int{1, 2, 8} {
		calls := 0
		run, err := Migrate(context.Background(), Options{Root: root, Rules: testRules, Concurrency: conc, Progress: func(done, total int) {
			calls++
			if done != calls || total != 41 {
				t.Errorf("progress(%d, %d) at call %d", done, total, calls)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !sort.SliceIsSorted(run.Files, func(i, j int) bool { return run.Files[i].Path < run.Files[j].Path }) {
			t.Error("files not sorted")
		}
		patch := run.Patch()
		if last != nil && !bytes.Equal(last, patch) {
			t.Errorf("concurrency %d: patch differs", conc)
		}
		last = patch
		if n := len(run.ChangedFiles()); n != 40 {
			t.Errorf("changed files = %d; want 40", n)
		}
	}
	if !bytes.Contains(last, []byte("diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n")) {
		t.Errorf("patch lacks git headers:\n%s", last[:200])
	}
	if bytes.Contains(last, []byte(`-# "cuda"`)) {
		t.Error("comment rewritten")
	}
	gitApplyCheck(t, root, last)
}

func gitApplyCheck(t *testing.T, dir string, patch []byte) {
	t.Helper()
	pf := filepath.Join(t.TempDir(), "p.patch")
	if err := os.WriteFile(pf, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "apply", "--check", "--unsafe-paths", pf)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply --check: %v\n%s", err, out)
	}
}

func TestBadInputs(t *testing.T) {
	for _, rs := range []struct {
		name  string
		rules []*rule.Rule
	}{{"test rules", testRules}, {"registry", nil}} {
		t.Run(rs.name, func(t *testing.T) { checkBadInputs(t, rs.rules) })
	}
}

func checkBadInputs(t *testing.T, rules []*rule.Rule) {
	root := writeTree(t, map[string]string{
		"ok.py":     "import torch\nd = torch.device(\"cuda\")\n",
		"syntax.py": "import torch\nd = torch.device(\"cuda\"\ndef (:\n",
		"latin1.py": "s = '\xe9t\xe9'\nd = \"cuda\"\n",
		"binary.py": "d = \"cuda\"\x00\x01\x02\n",
		"nb.ipynb":  `{"cells": [{"source": ["x.cuda()"]}]}`,
	})
	// A 50 MB file: over the default limit, never read.
	big, err := os.Create(filepath.Join(root, "big.py"))
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("d = torch.device(\"cuda\")\n")
	chunk := bytes.Repeat(line, (1<<20)/len(line))
	for i := 0; i < 50; i++ {
		if _, err := big.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	big.Close()
	outside := filepath.Join(t.TempDir(), "outside.py")
	os.WriteFile(outside, []byte("d = \"cuda\"\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "link_out.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok.py", filepath.Join(root, "link_in.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("missing.py", filepath.Join(root, "dangling.py")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	var nbSeen []string
	run, err := Migrate(context.Background(), Options{Root: root, Rules: rules, Notebook: func(p string, src []byte) []Diagnostic {
		nbSeen = append(nbSeen, p)
		return []Diagnostic{{Code: "PTT099", Severity: SevWarning, Path: p, Message: "notebook"}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"syntax.py": CodeSyntaxError, "latin1.py": CodeNotUTF8, "binary.py": CodeBinary, "big.py": CodeTooLarge,
		"link_out.py": CodeSymlinkOut, "dangling.py": CodeSymlinkOut, "nb.ipynb": "PTT099",
	}
	for _, f := range run.Files {
		code, ok := want[f.Path]
		if !ok {
			continue
		}
		delete(want, f.Path)
		if len(f.Diagnostics) == 0 || f.Diagnostics[0].Code != code {
			t.Errorf("%s: diagnostics %+v; want %s", f.Path, f.Diagnostics, code)
		}
		if f.Changed() {
			t.Errorf("%s: changed", f.Path)
		}
	}
	if len(want) > 0 {
		t.Errorf("files not reported: %v", want)
	}
	if got := paths(&Run{Files: run.ChangedFiles()}, ""); !reflect.DeepEqual(got, []string{"ok.py"}) {
		t.Errorf("changed = %v; want [ok.py]", got)
	}
	if !reflect.DeepEqual(nbSeen, []string{"nb.ipynb"}) {
		t.Errorf("notebook hook saw %v", nbSeen)
	}
	// Writing in place touches only ok.py.
	if _, err := WriteInPlace(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, root)
	for p, c := range before {
		if p != "ok.py" && after[p] != c {
			t.Errorf("%s changed on disk", p)
		}
	}
	if got, _ := os.ReadFile(outside); string(got) != "d = \"cuda\"\n" {
		t.Error("file outside the tree changed")
	}
}

func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			out[rel] = "link:" + l
			return nil
		}
		b, _ := os.ReadFile(p)
		out[rel] = string(b)
		return nil
	})
	return out
}

func TestWriteTreeAndInPlace(t *testing.T) {
	root := writeTree(t, map[string]string{
		"a.py":      "d = \"cuda\"\n",
		"data.txt":  "keep\n",
		"sub/b.py":  "x = 1\n",
		"sub/c.sh":  "#!/bin/sh\n",
		"script.py": "#!/usr/bin/env python\nd = \"cuda\"\n",
	})
	os.Chmod(filepath.Join(root, "script.py"), 0o755)
	os.Symlink("a.py", filepath.Join(root, "alias.py"))
	run, err := Migrate(context.Background(), Options{Root: root, Rules: testRules})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := WriteTree(context.Background(), run, out); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, out)
	want := map[string]string{
		"a.py": "d = \"tpu\"\n", "data.txt": "keep\n", "sub/b.py": "x = 1\n", "sub/c.sh": "#!/bin/sh\n",
		"script.py": "#!/usr/bin/env python\nd = \"tpu\"\n", "alias.py": "link:a.py",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("out tree = %v; want %v", got, want)
	}
	if err := WriteTree(context.Background(), run, out); err == nil {
		t.Error("WriteTree into a non-empty dir succeeded")
	}
	if _, err := WriteInPlace(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "script.py"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode after write = %v (%v); want 0755", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".pallasify-") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
	// A second run over the written tree changes nothing.
	run2, err := Migrate(context.Background(), Options{Root: root, Rules: testRules})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(run2.ChangedFiles()); n != 0 {
		t.Errorf("second pass changed %d files", n)
	}
}

func TestNewFilePatch(t *testing.T) {
	r := &Run{Files: []*File{{Path: "gen/new_mod.py", Generated: true, Updated: []byte("x = 1\ny = 2\n")}}}
	patch := r.Patch()
	want := "diff --git a/gen/new_mod.py b/gen/new_mod.py\nnew file mode 100644\n--- /dev/null\n+++ b/gen/new_mod.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
	if string(patch) != want {
		t.Errorf("patch =\n%s\nwant\n%s", patch, want)
	}
	gitApplyCheck(t, t.TempDir(), patch)
}

func TestAnalyzeKeepsNoContents(t *testing.T) {
	root := writeTree(t, map[string]string{"a.py": "d = \"cuda\"\n"})
	run, err := Analyze(context.Background(), Options{Root: root, Rules: testRules})
	if err != nil {
		t.Fatal(err)
	}
	f := run.Files[0]
	if f.Changed() || f.Original != nil || len(f.Diagnostics) != 1 || !f.Diagnostics[0].Applied {
		t.Errorf("analyze file = %+v", f)
	}
	var stages []string
	for _, tm := range run.Timings {
		stages = append(stages, tm.Stage)
	}
	if !reflect.DeepEqual(stages[:2], []string{StageAcquire, StageAnalyze}) {
		t.Errorf("stages = %v", stages)
	}
}

func TestRootErrors(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, nil, 0o644)
	for _, root := range []string{"", f, filepath.Join(t.TempDir(), "missing")} {
		if _, err := Migrate(context.Background(), Options{Root: root, Rules: testRules}); err == nil {
			t.Errorf("Migrate(%q) succeeded", root)
		}
	}
	if _, err := Migrate(context.Background(), Options{Root: t.TempDir(), Target: "gpu", Rules: testRules}); err == nil {
		t.Error("bad target accepted")
	}
}

// TestPrefilterSound checks the rules' Needles against every Python input
// the project has (rule testdata, fixture projects, documented examples):
// whenever a rule reports on a file with its needles ignored, the file must
// contain one of them, or the pre-filter could skip a file the rule would
// change.
func TestPrefilterSound(t *testing.T) {
	var inputs []string
	for _, root := range []string{filepath.Join("..", "transforms"), filepath.Join("..", "fixtures", "projects")} {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".py") && fi.Size() < 1<<16 {
				if b, err := os.ReadFile(p); err == nil {
					inputs = append(inputs, string(b))
				}
			}
			return nil
		})
	}
	all := defaultRules()
	for _, r := range all {
		inputs = append(inputs, r.Example.Before)
	}
	p := ts.NewParser(ts.Python)
	defer p.Close()
	checked := 0
	for _, r := range all {
		if len(r.Needles) == 0 {
			continue
		}
		bare := *r
		bare.Needles = nil
		for _, tg := range rule.Targets {
			eng := &rule.Engine{Rules: []*rule.Rule{&bare}, Opts: rule.Options{Target: tg, UnsafeFixes: true}}
			for _, in := range inputs {
				res, err := eng.Run(context.Background(), p, "x.py", []byte(in))
				if err != nil || len(res.Findings) == 0 {
					continue
				}
				checked++
				if len(newPrefilter([]*rule.Rule{r}).selectRules([]byte(in))) == 0 {
					t.Errorf("%s reports on a file containing none of its needles %q:\n%s", r.Code, r.Needles, in)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no rule reported on any input")
	}
}
