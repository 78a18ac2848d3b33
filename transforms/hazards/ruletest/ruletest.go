// Package ruletest runs a rule family's golden tests: every directory under
// testdata/ holds input.py and, per target, want.<target>.py (the output with
// safe fixes; missing = no change) and optionally want.<target>.unsafe.py (the
// output with --unsafe-fixes; missing = same as the safe output). Findings
// that are not fixed must be announced by `# want "regexp"` comments on their
// line. Every output must parse, reach a fixed point in one pass, and compile
// with `python3 -m py_compile` (one batched call per test).
package ruletest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Python returns the interpreter tests should use: $PALLASIFY_PYTHON, the
// repository's .venv, or python3 on PATH; "" when none exists.
func Python() string {
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if dir, err := os.Getwd(); err == nil {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				p := filepath.Join(d, ".venv", "bin", "python")
				if _, err := os.Stat(p); err == nil {
					return p
				}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p
	}
	return ""
}

// Compiler collects Python sources and compiles them all in one call.
type Compiler struct {
	dir   string
	files []string
	names []string
}

// NewCompiler returns a compiler writing into a test temp dir.
func NewCompiler(t *testing.T) *Compiler { return &Compiler{dir: t.TempDir()} }

// Add queues src (described by name in failures) for py_compile.
func (c *Compiler) Add(t *testing.T, name string, src []byte) {
	t.Helper()
	f := filepath.Join(c.dir, fmt.Sprintf("f%04d.py", len(c.files)))
	if err := os.WriteFile(f, src, 0o644); err != nil {
		t.Fatal(err)
	}
	c.files = append(c.files, f)
	c.names = append(c.names, name)
}

// Check runs py_compile once over everything queued.
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
	return RunPath(t, rules, opts, "input.py", src)
}

// RunPath applies rules to src, read from path, once.
func RunPath(t *testing.T, rules []*rule.Rule, opts rule.Options, path string, src []byte) *rule.Result {
	t.Helper()
	p := ts.NewParser(ts.Python)
	defer p.Close()
	e := &rule.Engine{Rules: rules, Opts: opts}
	r, err := e.Run(context.Background(), p, path, src)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	return r
}

// Output is the file after the run (src when unchanged).
func Output(r *rule.Result, src []byte) []byte {
	if r.Output != nil {
		return r.Output
	}
	return src
}

func parseErrors(t *testing.T, src []byte) int {
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

// Golden walks dir (a testdata directory) and checks every case. A case
// directory named after a rule runs that rule alone; any other name runs the
// whole family.
func Golden(t *testing.T, family []*rule.Rule, dir string, update bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*rule.Rule{}
	for _, r := range family {
		byName[r.Name] = r
	}
	comp := NewCompiler(t)
	cases := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		cases++
		name := e.Name()
		rules := family
		base := strings.SplitN(name, ".", 2)[0]
		if r, ok := byName[base]; ok {
			rules = []*rule.Rule{r}
		}
		t.Run(name, func(t *testing.T) {
			caseDir := filepath.Join(dir, name)
			in, err := os.ReadFile(filepath.Join(caseDir, "input.py"))
			if err != nil {
				t.Fatal(err)
			}
			if n := parseErrors(t, in); n > 0 {
				t.Fatalf("input.py has %d parse errors", n)
			}
			comp.Add(t, name+"/input.py", in)
			for _, target := range rule.Targets {
				for _, unsafe := range []bool{false, true} {
					checkCase(t, rules, caseDir, in, target, unsafe, update, comp)
				}
			}
		})
	}
	if cases == 0 {
		t.Fatalf("no cases under %s", dir)
	}
	comp.Check(t)
}

func checkCase(t *testing.T, rules []*rule.Rule, caseDir string, in []byte, target rule.Target, unsafe, update bool, comp *Compiler) {
	t.Helper()
	label := fmt.Sprintf("%s/unsafe=%v", target, unsafe)
	opts := rule.Options{Target: target, UnsafeFixes: unsafe}
	res := Run(t, rules, opts, in)
	for _, pr := range res.Problems {
		t.Errorf("%s: engine problem %s: %s", label, pr.Code, pr.Message)
	}
	got := Output(res, in)
	wantFile := filepath.Join(caseDir, "want."+string(target)+".py")
	if unsafe {
		wantFile = filepath.Join(caseDir, "want."+string(target)+".unsafe.py")
	}
	want, err := os.ReadFile(wantFile)
	if os.IsNotExist(err) {
		if unsafe {
			// Same as the safe result.
			safe := Output(Run(t, rules, rule.Options{Target: target}, in), in)
			want = safe
		} else {
			want = in
		}
		if update && !bytes.Equal(got, want) {
			if err := os.WriteFile(wantFile, got, 0o644); err != nil {
				t.Fatal(err)
			}
			want = got
		}
	} else if err != nil {
		t.Fatal(err)
	} else if update {
		if bytes.Equal(got, in) || (unsafe && bytes.Equal(got, Output(Run(t, rules, rule.Options{Target: target}, in), in))) {
			_ = os.Remove(wantFile)
		} else if err := os.WriteFile(wantFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		want = got
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: output differs from %s\n--- got ---\n%s\n--- want ---\n%s", label, filepath.Base(wantFile), got, want)
	}
	if n := parseErrors(t, got); n > 0 {
		t.Errorf("%s: output has %d parse errors", label, n)
	}
	if res.Output != nil {
		if again := Run(t, rules, opts, got); again.Output != nil {
			t.Errorf("%s: second pass changed the output:\n%s", label, again.Output)
		}
		comp.Add(t, filepath.Base(caseDir)+"/"+label, got)
	}
	checkNeedles(t, label, rules, in, res.Findings)
	if !unsafe {
		checkWants(t, label, target, in, res.Findings)
		checkMark(t, rules, target, in, res.Findings, comp, label)
	}
}

// checkNeedles requires every file a rule reports on to contain one of the
// rule's Needles (the driver's pre-filter would otherwise skip it).
func checkNeedles(t *testing.T, label string, rules []*rule.Rule, in []byte, findings []rule.Finding) {
	t.Helper()
	for _, f := range findings {
		for _, r := range rules {
			if r.Name != f.Rule || len(r.Needles) == 0 {
				continue
			}
			ok := false
			for _, n := range r.Needles {
				ok = ok || bytes.Contains(in, []byte(n))
			}
			if !ok {
				t.Errorf("%s: %s reported on a file without any of its needles %q", label, r.Code, r.Needles)
			}
		}
	}
}

var wantRe = regexp.MustCompile(`#\s*want(?::(portable|tpu))?\s+(.*)$`)

// wants parses `# want "re" "re2"` comments (`# want:tpu "re"` for one
// target only): line -> regexps.
func wants(t *testing.T, src []byte, target rule.Target) map[int][]*regexp.Regexp {
	out := map[int][]*regexp.Regexp{}
	for i, line := range strings.Split(string(src), "\n") {
		m := wantRe.FindStringSubmatch(line)
		if m == nil || (m[1] != "" && m[1] != string(target)) {
			continue
		}
		rest := strings.TrimSpace(m[2])
		for rest != "" {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("line %d: bad want comment %q: %v", i+1, line, err)
			}
			s, _ := strconv.Unquote(q)
			out[i+1] = append(out[i+1], regexp.MustCompile(s))
			rest = strings.TrimSpace(rest[len(q):])
		}
	}
	return out
}

// checkWants requires every finding left unfixed by the safe run to match a
// want on its line, and every want to be met.
func checkWants(t *testing.T, label string, target rule.Target, in []byte, findings []rule.Finding) {
	t.Helper()
	ws := wants(t, in, target)
	used := map[int][]bool{}
	for l, rs := range ws {
		used[l] = make([]bool, len(rs))
	}
	for _, f := range findings {
		if f.Applied {
			continue
		}
		text := f.Code + ": " + f.Message
		matched := false
		for i, re := range ws[f.Line] {
			if re.MatchString(text) {
				used[f.Line][i] = true
				matched = true
				break
			}
		}
		if !matched {
			t.Errorf("%s: line %d: unexpected finding %q", label, f.Line, text)
		}
	}
	lines := make([]int, 0, len(ws))
	for l := range ws {
		lines = append(lines, l)
	}
	sort.Ints(lines)
	for _, l := range lines {
		for i, re := range ws[l] {
			if !used[l][i] {
				t.Errorf("%s: line %d: no finding matched want %q", label, l, re)
			}
		}
	}
}

// checkMark runs with --mark: every unfixed diagnostic line gets a marker,
// the result parses, and a second marked pass changes nothing.
func checkMark(t *testing.T, rules []*rule.Rule, target rule.Target, in []byte, findings []rule.Finding, comp *Compiler, label string) {
	t.Helper()
	opts := rule.Options{Target: target, Mark: true}
	res := Run(t, rules, opts, in)
	out := Output(res, in)
	for _, f := range findings {
		if f.Fix == nil || f.Fix.Safety == rule.DisplayOnly {
			if !bytes.Contains(out, []byte("# pallasify: "+f.Code+" ")) {
				t.Errorf("%s --mark: no marker for %s at line %d", label, f.Code, f.Line)
			}
		}
	}
	if n := parseErrors(t, out); n > 0 {
		t.Errorf("%s --mark: output has %d parse errors", label, n)
	}
	if res.Output != nil {
		if again := Run(t, rules, opts, out); again.Output != nil {
			t.Errorf("%s --mark: second pass changed the output:\n%s", label, again.Output)
		}
		comp.Add(t, label+"/mark", out)
	}
}

// Docs checks each rule's documentation and runs its Example for both
// targets (with unsafe fixes enabled, as the example shows the fix).
func Docs(t *testing.T, family []*rule.Rule) {
	t.Helper()
	comp := NewCompiler(t)
	seen := map[string]bool{}
	for _, r := range family {
		t.Run(r.Name, func(t *testing.T) {
			if seen[r.Code] {
				t.Errorf("duplicate code %s", r.Code)
			}
			seen[r.Code] = true
			if !regexp.MustCompile(`^P[A-Z]{2}\d{3}$`).MatchString(r.Code) {
				t.Errorf("code %q is not a family prefix plus three digits", r.Code)
			}
			if !regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`).MatchString(r.Name) {
				t.Errorf("name %q is not kebab-case", r.Name)
			}
			if r.Title() == "" || r.Family == "" || r.Run == nil {
				t.Errorf("rule needs a title, a family and Run")
			}
			sections := []string{"## What it does", "## Why", "## Example"}
			if r.Safety != rule.Safe {
				sections = append(sections, "## Fix safety")
			}
			for _, s := range sections {
				if !strings.Contains(r.Doc, s) {
					t.Errorf("doc lacks %q", s)
				}
			}
			if r.Example.Before == "" {
				t.Fatalf("no example")
			}
			in := []byte(r.Example.Before)
			path := "example.py"
			if strings.HasPrefix(r.Example.Before, "{") {
				path = "example.ipynb" // a notebook example is notebook JSON
			} else {
				comp.Add(t, r.Name+"/example", in)
			}
			for _, target := range rule.Targets {
				want := r.Example.Portable
				if target == rule.TPU {
					want = r.Example.TPU
				}
				if want == "" {
					want = r.Example.Before
				}
				res := RunPath(t, []*rule.Rule{r}, rule.Options{Target: target, UnsafeFixes: true}, path, in)
				got := string(Output(res, in))
				if got != want {
					t.Errorf("%s: example output\n%s\nwant\n%s", target, got, want)
				}
				if !strings.Contains(r.Doc, strings.TrimSpace(want)) {
					t.Errorf("%s: the doc does not show the example output", target)
				}
				var own int
				for _, f := range res.Findings {
					if f.Code == r.Code {
						own++
					}
				}
				if own == 0 {
					t.Errorf("%s: the example raises no %s finding", target, r.Code)
				}
			}
		})
	}
	comp.Check(t)
}

// Robust runs the family over prefixes (cut at line ends) of every testdata
// input, for both targets with unsafe fixes and marks on: no rule
// may fail (PIO900), an output must parse as well as its input, and a second
// pass must change nothing.
func Robust(t *testing.T, family []*rule.Rule, dir string) {
	t.Helper()
	inputs, err := filepath.Glob(filepath.Join(dir, "*", "input.py"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs under %s: %v", dir, err)
	}
	for _, f := range inputs {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Cut at line ends; about 8 cuts per file keep the suite fast.
		var cuts []int
		for i, c := range src {
			if c == '\n' {
				cuts = append(cuts, i)
			}
		}
		step := len(cuts)/8 + 1
		var picked []int
		for i := 0; i < len(cuts); i += step {
			picked = append(picked, cuts[i])
		}
		picked = append(picked, len(src))
		for _, cut := range picked {
			in := src[:cut]
			for _, target := range rule.Targets {
				opts := rule.Options{Target: target, UnsafeFixes: true, Mark: true}
				res := Run(t, family, opts, in)
				for _, pr := range res.Problems {
					if pr.Code == rule.CodeRulePanic {
						t.Errorf("%s[:%d] %s: %s", f, cut, target, pr.Message)
					}
				}
				if res.Output == nil {
					continue
				}
				if again := Run(t, family, opts, res.Output); again.Output != nil {
					t.Errorf("%s[:%d] %s: second pass changed the output", f, cut, target)
				}
			}
		}
	}
}
