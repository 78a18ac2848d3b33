package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// testRule rewrites the string "cuda" to "tpu" wherever it appears as a
// string literal: the CLI tests' stand-in for the registry.
var testRule = &rule.Rule{
	Code: "PTT001", Name: "test-device", Doc: "Rewrite test device strings\n\nLonger doc.", Safety: rule.Safe, Needles: []string{`"cuda"`},
	Example: rule.Example{Before: "d = \"cuda\"\n", Portable: "d = \"tpu\"\n", TPU: "d = \"tpu\"\n"},
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

var testRules = []*rule.Rule{testRule}

func testStreams() (*streams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &streams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, out, errOut
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 2
}

func TestMigrateFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want migrateOptions
		code int
	}{
		{"defaults", []string{"repo"}, migrateOptions{treeFlags: treeFlags{Path: "repo", Target: "portable", Format: "text", Drive: true}, Color: "auto"}, 0},
		{"all flags", []string{"--target", "tpu", "--select", "PDV,PCA001", "--ignore", "PHF", "--include", "src/**", "--exclude", "tests",
			"--unsafe-fixes", "--mark", "--format", "sarif", "--check", "--write", "--patch", "p.patch", "-j", "3", "--color", "never", "repo"},
			migrateOptions{treeFlags: treeFlags{Path: "repo", Target: "tpu", Select: []string{"PDV", "PCA001"}, Ignore: []string{"PHF"},
				Include: []string{"src/**"}, Exclude: []string{"tests"}, UnsafeFixes: true, Format: "sarif", Jobs: 3, Drive: true},
				Mark: true, Check: true, Write: true, Patch: "p.patch", Color: "never",
				Explicit: map[string]bool{"target": true, "select": true, "ignore": true, "include": true, "exclude": true,
					"unsafe-fixes": true, "mark": true}}, 0},
		{"explicit default target", []string{"--target", "portable", "repo"}, migrateOptions{treeFlags: treeFlags{Path: "repo", Target: "portable", Format: "text", Drive: true},
			Color: "auto", Explicit: map[string]bool{"target": true}}, 0},
		{"out", []string{"--out", "dst", "repo"}, migrateOptions{treeFlags: treeFlags{Path: "repo", Target: "portable", Format: "text", Drive: true}, Out: "dst", Color: "auto"}, 0},
		{"no path", []string{}, migrateOptions{}, 2},
		{"two paths", []string{"a", "b"}, migrateOptions{}, 2},
		{"unknown flag", []string{"--frobnicate", "a"}, migrateOptions{}, 2},
		{"write and out", []string{"--write", "--out", "x", "a"}, migrateOptions{}, 2},
		{"bad color", []string{"--color", "pink", "a"}, migrateOptions{}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			io, _, _ := testStreams()
			var got *migrateOptions
			cmd := newMigrateCmd(io, func(ctx context.Context, o *migrateOptions) error { got = o; return nil })
			cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(err) })
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			cmd.SetOut(io.Out)
			cmd.SetErr(io.ErrOut)
			cmd.SetArgs(c.args)
			err := cmd.Execute()
			if code := exitCode(err); code != c.code {
				t.Fatalf("exit = %d (%v); want %d", code, err, c.code)
			}
			if c.code != 0 {
				return
			}
			got.IO, got.Getenv = nil, nil
			if !got.Kernels.Enabled || got.Kernels.Timeout <= 0 {
				t.Errorf("kernel stages off by default: %+v", got.Kernels)
			}
			got.Kernels = kernelFlags{} // kernel flags: kernels_test.go
			if !reflect.DeepEqual(*got, c.want) {
				t.Errorf("options = %+v\nwant      %+v", *got, c.want)
			}
		})
	}
}

func TestMigrateRunBadOptions(t *testing.T) {
	root := t.TempDir()
	cases := []struct {
		name string
		o    migrateOptions
	}{
		{"bad target", migrateOptions{treeFlags: treeFlags{Path: root, Target: "gpu", Format: "text"}}},
		{"bad format", migrateOptions{treeFlags: treeFlags{Path: root, Target: "tpu", Format: "xml"}}},
		{"missing path", migrateOptions{treeFlags: treeFlags{Path: filepath.Join(root, "nope"), Target: "tpu", Format: "text"}}},
		{"unknown rule", migrateOptions{treeFlags: treeFlags{Path: root, Target: "tpu", Format: "text", Select: []string{"PZZ"}}}},
	}
	for _, c := range cases {
		io, _, _ := testStreams()
		c.o.IO, c.o.Rules, c.o.Getenv = io, testRules, os.Getenv
		if code := exitCode(migrateRun(context.Background(), &c.o)); code != 2 {
			t.Errorf("%s: exit %d; want 2", c.name, code)
		}
	}
}

func writeProject(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"train.py":     "import torch\n\nd = torch.device(\"cuda\")\n",
		"run.py":       "#!/usr/bin/env python\nx = \"cuda\"\n",
		"lib/plain.py": "x = 1\n",
		"data.txt":     "cuda\n",
	}
	for p, c := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(root, "run.py"), 0o750)
	return root
}

func newMigrate(t *testing.T, root string) (*migrateOptions, *bytes.Buffer) {
	io, out, _ := testStreams()
	return &migrateOptions{IO: io, treeFlags: treeFlags{Path: root, Target: "tpu", Format: "text", Rules: testRules},
		Color: "auto", Getenv: func(string) string { return "" }}, out
}

func TestMigrateDryRunAndCheck(t *testing.T) {
	root := writeProject(t)
	o, out := newMigrate(t, root)
	if code := exitCode(migrateRun(context.Background(), o)); code != 0 {
		t.Fatalf("dry run exit %d", code)
	}
	s := out.String()
	for _, want := range []string{"diff --git a/run.py b/run.py\n", "-x = \"cuda\"\n+x = \"tpu\"\n", "diff --git a/train.py b/train.py\n", "dry run", "would change 2"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b[") {
		t.Error("colour on a non-terminal")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "train.py")); strings.Contains(string(b), "tpu") {
		t.Error("dry run wrote the file")
	}
	o, _ = newMigrate(t, root)
	o.Check = true
	if code := exitCode(migrateRun(context.Background(), o)); code != 1 {
		t.Errorf("--check with changes: exit %d; want 1", code)
	}
	o, _ = newMigrate(t, root)
	o.Check, o.Select = true, []string{"PTT"}
	o.Exclude = []string{"*.py"}
	if code := exitCode(migrateRun(context.Background(), o)); code != 0 {
		t.Errorf("--check without changes: exit %d; want 0", code)
	}
}

func TestMigrateColour(t *testing.T) {
	root := writeProject(t)
	cases := []struct {
		color, noColor string
		want           bool
	}{{"always", "", true}, {"never", "", false}, {"auto", "", false}, {"always", "1", true}}
	for _, c := range cases {
		o, out := newMigrate(t, root)
		o.Color = c.color
		o.Getenv = func(k string) string {
			if k == "NO_COLOR" {
				return c.noColor
			}
			return ""
		}
		if err := migrateRun(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "\x1b["); got != c.want {
			t.Errorf("--color %s NO_COLOR=%q: coloured = %v; want %v", c.color, c.noColor, got, c.want)
		}
	}
}

func TestMigrateWriteKeepsMode(t *testing.T) {
	root := writeProject(t)
	o, out := newMigrate(t, root)
	o.Write = true
	if err := migrateRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "diff --git") {
		t.Error("--write printed the diff")
	}
	if !strings.Contains(out.String(), "written in place (2 files)") {
		t.Errorf("summary: %s", out.String())
	}
	fi, err := os.Stat(filepath.Join(root, "run.py"))
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("run.py mode = %v; want 0750", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(filepath.Join(root, "run.py")); string(b) != "#!/usr/bin/env python\nx = \"tpu\"\n" {
		t.Errorf("run.py = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "data.txt")); string(b) != "cuda\n" {
		t.Error("non-Python file rewritten")
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), "pallasify-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
	// Idempotent: --check now passes.
	o, _ = newMigrate(t, root)
	o.Check = true
	if code := exitCode(migrateRun(context.Background(), o)); code != 0 {
		t.Errorf("second run --check exit %d; want 0", code)
	}
}

func TestMigrateOutAndPatch(t *testing.T) {
	root := writeProject(t)
	dst := filepath.Join(t.TempDir(), "migrated")
	patch := filepath.Join(t.TempDir(), "tpu.patch")
	o, out := newMigrate(t, root)
	o.Out, o.Patch, o.Format = dst, patch, "json"
	if err := migrateRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(out.String()), "{") {
		t.Errorf("--format json printed %q", out.String()[:40])
	}
	for p, want := range map[string]string{"train.py": "import torch\n\nd = torch.device(\"tpu\")\n", "lib/plain.py": "x = 1\n", "data.txt": "cuda\n"} {
		if b, err := os.ReadFile(filepath.Join(dst, p)); err != nil || string(b) != want {
			t.Errorf("out/%s = %q (%v); want %q", p, b, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "train.py")); strings.Contains(string(b), "tpu") {
		t.Error("--out modified the source tree")
	}
	p, err := os.ReadFile(patch)
	if err != nil || !bytes.HasPrefix(p, []byte("diff --git a/run.py b/run.py\n")) {
		t.Fatalf("patch = %q (%v)", p, err)
	}
	cmd := exec.Command("git", "apply", "--check", patch)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("git apply --check: %v\n%s", err, b)
	}
	// --out into a non-empty directory is an I/O error.
	o, _ = newMigrate(t, root)
	o.Out = dst
	if code := exitCode(migrateRun(context.Background(), o)); code != 2 {
		t.Errorf("--out into non-empty dir: exit %d; want 2", code)
	}
}

func TestAnalyzeAndRules(t *testing.T) {
	root := writeProject(t)
	io, out, _ := testStreams()
	o := &analyzeOptions{IO: io, treeFlags: treeFlags{Path: root, Target: "portable", Format: "markdown", Rules: testRules}}
	if err := analyzeRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "## pallasify analyze report") || !strings.Contains(out.String(), "| `PTT001` |") {
		t.Errorf("analyze markdown:\n%s", out.String())
	}
	if b, _ := os.ReadFile(filepath.Join(root, "train.py")); strings.Contains(string(b), "tpu") {
		t.Error("analyze wrote a file")
	}
	cases := []struct {
		code string
		want []string
		exit int
	}{
		{"", []string{"PTT001", "safe", "test-device", "Rewrite test device strings", "PIO001", "PIO005"}, 0},
		{"PTT001", []string{"PTT001 test-device — Rewrite test device strings", "Longer doc.", "Example (before):", "After, --target portable:", "After, --target tpu:", "    d = \"tpu\""}, 0},
		{"pio002", []string{"PIO002 not-utf8"}, 0},
		{"PZZ999", nil, 2},
	}
	for _, c := range cases {
		io, out, _ := testStreams()
		err := rulesRun(context.Background(), &rulesOptions{IO: io, Code: c.code, Rules: testRules})
		if code := exitCode(err); code != c.exit {
			t.Errorf("rules %s: exit %d; want %d", c.code, code, c.exit)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("rules %s lacks %q:\n%s", c.code, w, out.String())
			}
		}
	}
}

// targetRule rewrites the string "cuda" to the target's name, so the output
// shows which target a run used.
var targetRule = &rule.Rule{
	Code: "PTT002", Name: "test-target", Doc: "Name the target\n\nLonger doc.", Safety: rule.Safe, Needles: []string{`"cuda"`},
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "string" && p.Text(n) == `"cuda"` {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "cuda device string",
					Fix: &rule.Fix{Title: "name the target", Edits: []rule.Edit{{Start: int(n.StartByte()), End: int(n.EndByte()), New: `"` + string(p.Target) + `"`}}}})
			}
			return true
		})
	},
}

// TestMigrateExplicitFlagBeatsConfig: pallasify.yaml fills only the flags
// the command line left unset; an explicit flag wins even when it repeats
// the default.
func TestMigrateExplicitFlagBeatsConfig(t *testing.T) {
	cases := []struct {
		name, yaml string
		args       []string
		want       string
	}{
		{"config fills an unset flag", "target: tpu\n", nil, `+x = "tpu"`},
		{"explicit default wins", "target: tpu\n", []string{"--target", "portable"}, `+x = "portable"`},
		{"explicit flag wins", "target: portable\n", []string{"--target=tpu"}, `+x = "tpu"`},
		{"no config", "", []string{"--target", "tpu"}, `+x = "tpu"`},
		{"explicit select wins", "target: tpu\nselect: [PZZ]\n", []string{"--select", "PTT"}, `+x = "tpu"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "run.py"), []byte("x = \"cuda\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.yaml != "" {
				if err := os.WriteFile(filepath.Join(root, "pallasify.yaml"), []byte(c.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			io, out, errOut := testStreams()
			cmd := newMigrateCmd(io, func(ctx context.Context, o *migrateOptions) error {
				o.Rules, o.Getenv = []*rule.Rule{targetRule}, func(string) string { return "" }
				return migrateRun(ctx, o)
			})
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			cmd.SetOut(io.Out)
			cmd.SetErr(io.ErrOut)
			cmd.SetArgs(append(append([]string{}, c.args...), root))
			if err := cmd.Execute(); err != nil {
				t.Fatalf("migrate: %v\n%s", err, errOut)
			}
			if !strings.Contains(out.String(), c.want+"\n") {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
		})
	}
}
