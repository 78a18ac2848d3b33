// Package ruletest runs the golden tests of every rule family (device,
// cudaapi, amp, distributed, hf, compile, hazards, xla) and checks every
// rule's documented example (Docs).
//
// Each directory under testdata/ is a case, named <rule> or <rule>.<variant>
// (that rule runs alone) or family.<variant> (the whole family runs); a
// <rule>.nochange case must come out as it went in. A case holds input.py plus, per target,
// want.<target>.py (the output with safe fixes; missing = no change) and
// want.<target>.unsafe.py (the output with --unsafe-fixes; missing = same as
// the safe output). For every case and target the harness checks that the
// input parses, that the output matches, that the run raises no engine
// problem, that a second pass over the output changes nothing, that the
// output parses cleanly, and, in one batched python call per test, that
// every output compiles with py_compile. A Style adds further checks:
// `# want "regexp"` comments for unfixed findings, rule Needles, the --mark
// pass, and every parsing prefix of the input.
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

	udiff "github.com/aymanbagabas/go-udiff"

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

// Check runs py_compile once over everything queued, failing t on any error.
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

// Diff is a unified diff from want to got, for test failures.
func Diff(want, got []byte) string {
	return udiff.Unified("want", "got", string(want), string(got))
}

// Check runs rules over src for one target and asserts the invariants every
// output must hold: no engine problems, output parses, second pass is a
// no-op. It returns the output.
func Check(t *testing.T, rules []*rule.Rule, opts rule.Options, src []byte) []byte {
	t.Helper()
	_, out := check(t, "", rules, opts, src)
	return out
}

// check is Check with a label prefixed to failures; it also returns the
// result of the first run.
func check(t *testing.T, label string, rules []*rule.Rule, opts rule.Options, src []byte) (*rule.Result, []byte) {
	t.Helper()
	if label != "" {
		label += ": "
	}
	r := Run(t, rules, opts, src)
	for _, pr := range r.Problems {
		t.Errorf("%sengine problem %s at line %d: %s", label, pr.Code, pr.Line, pr.Message)
	}
	out := Output(r, src)
	if n := ParseErrors(t, out); n > 0 {
		t.Errorf("%soutput has %d parse errors:\n%s", label, n, out)
	}
	if r.Output != nil {
		if r2 := Run(t, rules, opts, out); r2.Output != nil {
			t.Errorf("%ssecond pass changed the output:\n%s", label, Diff(out, r2.Output))
		}
	}
	return r, out
}

// Style selects the family-specific checks Golden runs besides the common
// ones.
type Style struct {
	// Wants checks `# want "regexp"` comments against the findings the
	// safe run leaves unfixed.
	Wants bool
	// Needles checks that a rule only reports on files holding one of its
	// Needles.
	Needles bool
	// Mark checks the --mark pass: a marker per unfixed finding, the output
	// parses and compiles, and a second marked pass changes nothing.
	Mark bool
	// Prefixes runs the case's rules over every prefix of the input (whole
	// lines) that parses.
	Prefixes bool
}

// Device is the style of the device, cudaapi, amp and distributed families:
// needles, --mark and every parsing prefix of the input are checked. Their
// inputs carry no `# want` comments.
var Device = Style{Needles: true, Mark: true, Prefixes: true}

// Hazards is the style of the hazards, hf, compile and xla families: every
// check is on, `# want` comments included.
var Hazards = Style{Wants: true, Needles: true, Mark: true, Prefixes: true}

// NoChange is the variant of a case whose input must come out unchanged for
// every target, safe and unsafe: <rule>.nochange (or family.<what>.nochange).
// Such a case may hold no want files.
const NoChange = "nochange"

// RuleFor returns the rule a case runs alone: the rule named like the case
// up to its first "." (a case is named <rule> or <rule>.<variant>); nil for
// any other name (by convention family.<variant>), which runs the whole
// family.
func RuleFor(family []*rule.Rule, caseName string) *rule.Rule {
	base, _, _ := strings.Cut(caseName, ".")
	for _, r := range family {
		if r.Name == base {
			return r
		}
	}
	return nil
}

// noChange reports whether a case name's last variant is NoChange.
func noChange(caseName string) bool {
	_, variant, ok := strings.Cut(caseName, ".")
	return ok && (variant == NoChange || strings.HasSuffix(variant, "."+NoChange))
}

// Golden walks dir (a testdata directory) and checks every case against its
// golden files in the given style; with update it rewrites them instead. A
// case runs the rule RuleFor names, else the whole family; a NoChange case
// must leave its input as it is.
func Golden(t *testing.T, family []*rule.Rule, dir string, update bool, style Style) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	comp := NewCompiler(t)
	cases := 0
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		cases++
		name := ent.Name()
		caseDir := filepath.Join(dir, name)
		rules := family
		if r := RuleFor(family, name); r != nil {
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
			if noChange(name) {
				if wants, _ := filepath.Glob(filepath.Join(caseDir, "want.*")); len(wants) > 0 && !update {
					t.Fatalf("a %s case holds want files: %v", NoChange, wants)
				}
			}
			if style.Prefixes {
				checkPrefixes(t, rules, src)
			}
			for _, tg := range rule.Targets {
				checkTarget(t, rules, caseDir, src, tg, update, style, comp)
			}
		})
	}
	if cases == 0 {
		t.Fatalf("no cases under %s", dir)
	}
	comp.Check(t)
}

// checkTarget checks one case for one target, safe and unsafe.
func checkTarget(t *testing.T, rules []*rule.Rule, caseDir string, src []byte, tg rule.Target, update bool, style Style, comp *Compiler) {
	t.Helper()
	name := filepath.Base(caseDir)
	safeLabel, unsafeLabel := string(tg), string(tg)+" --unsafe-fixes"
	safeRes, safe := check(t, safeLabel, rules, rule.Options{Target: tg}, src)
	unsafeRes, unsafe := check(t, unsafeLabel, rules, rule.Options{Target: tg, UnsafeFixes: true}, src)
	if safeRes.Output != nil {
		comp.Add(t, name+"/"+string(tg), safe)
	}
	if unsafeRes.Output != nil {
		comp.Add(t, name+"/"+string(tg)+".unsafe", unsafe)
	}
	if noChange(name) && (!bytes.Equal(safe, src) || !bytes.Equal(unsafe, src)) {
		t.Errorf("%s: a %s case changed:\n%s", tg, NoChange, Diff(src, unsafe))
	}
	if style.Needles {
		checkNeedles(t, safeLabel, rules, src, safeRes.Findings)
		checkNeedles(t, unsafeLabel, rules, src, unsafeRes.Findings)
	}
	if style.Wants {
		checkWants(t, safeLabel, tg, src, safeRes.Findings)
	}
	if style.Mark {
		checkMark(t, rules, tg, src, safeRes.Findings, comp, name+"/"+safeLabel)
	}
	safePath := filepath.Join(caseDir, "want."+string(tg)+".py")
	unsafePath := filepath.Join(caseDir, "want."+string(tg)+".unsafe.py")
	if update {
		writeOrRemove(t, safePath, safe, !bytes.Equal(safe, src))
		writeOrRemove(t, unsafePath, unsafe, !bytes.Equal(unsafe, safe))
		return
	}
	wantSafe := readOr(t, safePath, src)
	wantUnsafe := readOr(t, unsafePath, wantSafe)
	if !bytes.Equal(safe, wantSafe) {
		t.Errorf("%s: output differs from %s:\n%s", safeLabel, filepath.Base(safePath), Diff(wantSafe, safe))
	}
	if !bytes.Equal(unsafe, wantUnsafe) {
		t.Errorf("%s: output differs from %s:\n%s", unsafeLabel, filepath.Base(unsafePath), Diff(wantUnsafe, unsafe))
	}
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
			if r.Output != nil {
				if r2 := Run(t, rules, opts, r.Output); r2.Output != nil {
					t.Errorf("first %d lines, %s: second pass changed the output:\n%s", k, tg, Diff(r.Output, r2.Output))
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

// checkNeedles requires every file a rule reports on to contain one of the
// rule's Needles (the driver's pre-filter would otherwise skip it).
func checkNeedles(t *testing.T, label string, rules []*rule.Rule, in []byte, findings []rule.Finding) {
	t.Helper()
	for _, f := range findings {
		for _, r := range rules {
			if r.Name != f.Rule || len(r.Needles) == 0 {
				continue
			}
			if !r.MayReport(in) {
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
	if n := ParseErrors(t, out); n > 0 {
		t.Errorf("%s --mark: output has %d parse errors", label, n)
	}
	if res.Output != nil {
		if again := Run(t, rules, opts, out); again.Output != nil {
			t.Errorf("%s --mark: second pass changed the output:\n%s", label, again.Output)
		}
		comp.Add(t, label+"/mark", out)
	}
}

// exampleWant is the documented output of r's Example for target tg.
func exampleWant(r *rule.Rule, tg rule.Target) string {
	want := r.Example.Portable
	if tg == rule.TPU {
		want = r.Example.TPU
	}
	if want == "" {
		want = r.Example.Before
	}
	return want
}

// Docs is the one check of the rules' documentation, for a family or for
// the whole registry. For every rule: a unique code of a family prefix plus
// three digits, a kebab-case name, a title, a family and Run; a doc with the
// sections kit.Doc renders ("## Fix safety" unless the rule is Safe); and
// its Example, run as the only rule for both targets with unsafe fixes (the
// example shows the fix): the output must match the documented one, appear
// in the doc, come with a finding of the rule, raise no engine problem,
// parse, compile, and be a fixed point of a second pass.
func Docs(t *testing.T, rules []*rule.Rule) {
	t.Helper()
	comp := NewCompiler(t)
	seen := map[string]bool{}
	for _, r := range rules {
		t.Run(r.Code+"-"+r.Name, func(t *testing.T) {
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
			if strings.TrimSpace(r.Example.Before) == "" {
				t.Fatalf("no example")
			}
			in := []byte(r.Example.Before)
			path, notebook := "example.py", strings.HasPrefix(r.Example.Before, "{")
			if notebook {
				path = "example.ipynb" // a notebook example is notebook JSON
			} else {
				comp.Add(t, r.Code+"/example.py", in)
			}
			for _, target := range rule.Targets {
				want := exampleWant(r, target)
				opts := rule.Options{Target: target, UnsafeFixes: true}
				res := RunPath(t, []*rule.Rule{r}, opts, path, in)
				out := Output(res, in)
				if string(out) != want {
					t.Errorf("%s: example output\n%s\nwant\n%s", target, out, want)
				}
				if !strings.Contains(r.Doc, strings.TrimSpace(want)) {
					t.Errorf("%s: the doc does not show the example output", target)
				}
				own := 0
				for _, f := range res.Findings {
					if f.Code == r.Code {
						own++
					}
				}
				if own == 0 {
					t.Errorf("%s: the example raises no %s finding", target, r.Code)
				}
				for _, pr := range res.Problems {
					t.Errorf("%s: engine problem %s at line %d: %s", target, pr.Code, pr.Line, pr.Message)
				}
				if res.Output == nil {
					continue
				}
				if again := RunPath(t, []*rule.Rule{r}, opts, path, out); again.Output != nil {
					t.Errorf("%s: second pass changed the example output:\n%s", target, Diff(out, again.Output))
				}
				if !notebook {
					if n := ParseErrors(t, out); n > 0 {
						t.Errorf("%s: example output has %d parse errors", target, n)
					}
					comp.Add(t, r.Code+"/"+string(target)+".py", out)
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
