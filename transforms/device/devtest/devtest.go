// Package devtest runs the golden tests of the device, cudaapi, amp and
// distributed rule families.
//
// Each directory under testdata/ is a case: input.py plus, per target,
// want.<target>.py (the output with safe fixes; missing = no change) and
// want.<target>.unsafe.py (the output with --unsafe-fixes; missing = same as
// the safe output). A case directory whose name starts with a rule's name
// runs that rule alone; any other runs the whole family. For every case and
// target the harness checks that the input parses, that the output matches,
// that a second pass over the output changes nothing, that the output parses
// cleanly, and, in one batched python call per test, that every output
// compiles with py_compile.
package devtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Python returns the interpreter to use: $PALLASIFY_PYTHON, the
// repository's .venv, or python3 on PATH; "" when there is none.
func Python() string {
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if dir, err := os.Getwd(); err == nil {
		for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				p := filepath.Join(d, ".venv", "bin", "python")
				if _, err := os.Stat(p); err == nil {
					return p
				}
				break
			}
		}
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p
	}
	return ""
}

// Compiler queues Python sources and compiles them in one python call.
type Compiler struct {
	dir   string
	files []string
	names []string
}

// NewCompiler returns a Compiler that writes into a test temp dir.
func NewCompiler(t *testing.T) *Compiler { return &Compiler{dir: t.TempDir()} }

// Add queues src, described as name in failures.
func (c *Compiler) Add(t *testing.T, name string, src []byte) {
	t.Helper()
	f := filepath.Join(c.dir, fmt.Sprintf("f%04d.py", len(c.files)))
	if err := os.WriteFile(f, src, 0o644); err != nil {
		t.Fatal(err)
	}
	c.files = append(c.files, f)
	c.names = append(c.names, name)
}

// Check compiles everything queued, failing t on any error.
func (c *Compiler) Check(t *testing.T) {
	t.Helper()
	if len(c.files) == 0 {
		return
	}
	py := Python()
	if py == "" {
		t.Skip("no python interpreter (set PALLASIFY_PYTHON)")
	}
	script := `import py_compile, sys
bad = 0
for f in sys.argv[1:]:
    try:
        py_compile.compile(f, doraise=True, cfile=f + "c")
    except py_compile.PyCompileError as e:
        print(f, e.msg.replace("\n", " "))
        bad += 1
sys.exit(1 if bad else 0)
`
	out, err := exec.Command(py, append([]string{"-c", script}, c.files...)...).CombinedOutput()
	if err != nil {
		msg := string(out)
		for i, f := range c.files {
			msg = strings.ReplaceAll(msg, f, c.names[i])
		}
		t.Errorf("py_compile failed: %v\n%s", err, msg)
	}
}

// Run applies rules to src once.
func Run(t *testing.T, rules []*rule.Rule, opts rule.Options, src []byte) *rule.Result {
	t.Helper()
	p := ts.NewParser(ts.Python)
	defer p.Close()
	e := &rule.Engine{Rules: rules, Opts: opts}
	r, err := e.Run(context.Background(), p, "input.py", src)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	return r
}

// Output is the file after a run (src when unchanged).
func Output(r *rule.Result, src []byte) []byte {
	if r.Output != nil {
		return r.Output
	}
	return src
}

// ParseErrors counts the error nodes of src.
func ParseErrors(t *testing.T, src []byte) int {
	t.Helper()
	p := ts.NewParser(ts.Python)
	defer p.Close()
	tree, err := p.Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	return tree.ErrorCount()
}

// Check runs rules over src for one target and asserts the invariants every
// output must hold: no engine problems, output parses, second pass is a
// no-op. It returns the output.
func Check(t *testing.T, rules []*rule.Rule, opts rule.Options, src []byte) []byte {
	t.Helper()
	r := Run(t, rules, opts, src)
	for _, pr := range r.Problems {
		t.Errorf("engine problem %s at line %d: %s", pr.Code, pr.Line, pr.Message)
	}
	out := Output(r, src)
	if n := ParseErrors(t, out); n > 0 {
		t.Errorf("output has %d parse errors:\n%s", n, out)
	}
	if r2 := Run(t, rules, opts, out); r2.Output != nil {
		t.Errorf("second pass changed the output:\n%s", Diff(out, r2.Output))
	}
	return out
}

// Golden walks dir (a testdata directory) and checks every case against its
// golden files; with update it rewrites them instead.
func Golden(t *testing.T, family []*rule.Rule, dir string, update bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	comp := NewCompiler(t)
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		name := ent.Name()
		caseDir := filepath.Join(dir, name)
		rules := family
		if r := ruleFor(family, name); r != nil {
			rules = []*rule.Rule{r}
		}
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(caseDir, "input.py"))
			if err != nil {
				t.Fatal(err)
			}
			if n := ParseErrors(t, src); n > 0 {
				t.Fatalf("input.py has %d parse errors", n)
			}
			comp.Add(t, name+"/input.py", src)
			checkPrefixes(t, rules, src)
			for _, tg := range rule.Targets {
				safe := Check(t, rules, rule.Options{Target: tg}, src)
				unsafe := Check(t, rules, rule.Options{Target: tg, UnsafeFixes: true}, src)
				safePath := filepath.Join(caseDir, "want."+string(tg)+".py")
				unsafePath := filepath.Join(caseDir, "want."+string(tg)+".unsafe.py")
				if update {
					writeOrRemove(t, safePath, safe, !bytes.Equal(safe, src))
					writeOrRemove(t, unsafePath, unsafe, !bytes.Equal(unsafe, safe))
					continue
				}
				wantSafe := readOr(t, safePath, src)
				wantUnsafe := readOr(t, unsafePath, wantSafe)
				if !bytes.Equal(safe, wantSafe) {
					t.Errorf("%s: output differs from %s:\n%s", tg, filepath.Base(safePath), Diff(wantSafe, safe))
				}
				if !bytes.Equal(unsafe, wantUnsafe) {
					t.Errorf("%s --unsafe-fixes: output differs from %s:\n%s", tg, filepath.Base(unsafePath), Diff(wantUnsafe, unsafe))
				}
				comp.Add(t, name+"/"+string(tg), safe)
				comp.Add(t, name+"/"+string(tg)+".unsafe", unsafe)
			}
		})
	}
	comp.Check(t)
}

// checkPrefixes runs the rules over every prefix of src (whole lines) that
// parses: partial code must not make a rule fail, produce an output that
// parses worse, or miss the fixed point.
func checkPrefixes(t *testing.T, rules []*rule.Rule, src []byte) {
	t.Helper()
	lines := bytes.SplitAfter(src, []byte("\n"))
	for k := 1; k < len(lines); k++ {
		prefix := bytes.Join(lines[:k], nil)
		if ParseErrors(t, prefix) > 0 {
			continue
		}
		for _, tg := range rule.Targets {
			opts := rule.Options{Target: tg, UnsafeFixes: true}
			r := Run(t, rules, opts, prefix)
			if len(r.Problems) > 0 {
				t.Errorf("first %d lines, %s: engine problem %s: %s", k, tg, r.Problems[0].Code, r.Problems[0].Message)
				continue
			}
			if out := Output(r, prefix); r.Output != nil {
				if r2 := Run(t, rules, opts, out); r2.Output != nil {
					t.Errorf("first %d lines, %s: second pass changed the output:\n%s", k, tg, Diff(out, r2.Output))
				}
			}
		}
	}
}

func readOr(t *testing.T, path string, def []byte) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return def
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeOrRemove(t *testing.T, path string, b []byte, keep bool) {
	t.Helper()
	if !keep {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ruleFor returns the rule whose name is the longest prefix of a case name.
func ruleFor(family []*rule.Rule, name string) *rule.Rule {
	var best *rule.Rule
	for _, r := range family {
		if (name == r.Name || strings.HasPrefix(name, r.Name+"-")) && (best == nil || len(r.Name) > len(best.Name)) {
			best = r
		}
	}
	return best
}

// Diff is a unified diff from want to got, for test failures.
func Diff(want, got []byte) string {
	return udiff.Unified("want", "got", string(want), string(got))
}

// CheckExamples runs every rule's documented Example through the engine, as
// the only rule, for both targets (with unsafe fixes, since the example shows
// what the rule does) and compares with the documented output.
func CheckExamples(t *testing.T, rules []*rule.Rule) {
	t.Helper()
	comp := NewCompiler(t)
	for _, r := range rules {
		t.Run(r.Code, func(t *testing.T) {
			ex := r.Example
			if strings.TrimSpace(ex.Before) == "" {
				t.Fatalf("%s has no Example.Before", r.Code)
			}
			for _, tg := range rule.Targets {
				want := ex.Portable
				if tg == rule.TPU {
					want = ex.TPU
				}
				if want == "" {
					want = ex.Before
				}
				out := Check(t, []*rule.Rule{r}, rule.Options{Target: tg, UnsafeFixes: true}, []byte(ex.Before))
				if string(out) != want {
					t.Errorf("%s example, %s: got\n%s\nwant\n%s", r.Code, tg, out, want)
				}
				comp.Add(t, r.Code+"."+string(tg)+".py", out)
			}
		})
	}
	comp.Check(t)
}

// SortedNames is a helper for deterministic listings in tests.
func SortedNames(rules []*rule.Rule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}
