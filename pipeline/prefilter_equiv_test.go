package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
)

// TestPrefilterEquivalence is the proof that the prefilter only saves work:
// every rule's example, every golden input and every fixture project (and,
// with PALLASIFY_REALTREE=DIR, a real tree such as the bench's transformers
// and diffusers sources) is migrated twice, with the rules' needles and with
// every needle removed (each rule runs on each file, and the kernel stage
// reads every Python file itself), for both targets, with
// and without unsafe fixes; the findings, the skipped files, the rewritten
// files, the kernels and the patch must be identical. The one difference
// allowed is the documented one: a file that no rule can report on is not
// parsed, so its syntax error (PIO001) is not reported; the prefilter counts
// a rule's needle only outside comments and bare string statements (the
// lexical pre-check, prefilter_lex.go), so that covers a file whose needles
// all lie there.
func TestPrefilterEquivalence(t *testing.T) {
	corpus := corpusTree(t)
	trees := map[string]string{"examples+goldens": corpus,
		// The `\q` needle parts (rule.StringStart) on strings that no longer
		// open with their needle: "x cuda:0" and "cuda x:0".
		"examples+goldens, strings led": stringsEdited(t, corpus, func(b []byte) []byte { return append([]byte("x "), b...) }),
		"examples+goldens, strings continued": stringsEdited(t, corpus, func(b []byte) []byte {
			if bytes.HasPrefix(b, []byte("cuda")) {
				return append([]byte("cuda x"), b[4:]...)
			}
			return b
		})}
	projects, _ := filepath.Glob(filepath.Join("..", "fixtures", "projects", "*"))
	e2e, _ := filepath.Glob(filepath.Join("..", "fixtures", "e2e", "*"))
	for _, p := range append(projects, e2e...) {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			trees[filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p)] = p
		}
	}
	if len(trees) < 5 {
		t.Fatalf("found only %d trees; the fixtures moved?", len(trees))
	}
	if rt := os.Getenv("PALLASIFY_REALTREE"); rt != "" {
		trees["real tree"] = rt
	}
	bare := bareRules(defaultRules())
	names := make([]string, 0, len(trees))
	for n := range trees {
		names = append(names, n)
	}
	sort.Strings(names)
	pf := newPrefilter(defaultRules())
	compared := 0
	for _, name := range names {
		root := trees[name]
		for _, tg := range rule.Targets {
			for _, unsafe := range []bool{false, true} {
				if name == "real tree" && unsafe {
					continue // one configuration is enough for the big tree
				}
				label := fmt.Sprintf("%s (%s, unsafe=%v)", name, tg, unsafe)
				with, err := Migrate(context.Background(), Options{Root: root, Target: tg, UnsafeFixes: unsafe})
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				without, err := Migrate(context.Background(), Options{Root: root, Target: tg, UnsafeFixes: unsafe, Rules: bare,
					Discover: unhintedKernels{NewKernelStage()}})
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				dropUnparsedSyntaxErrors(t, without, root, pf)
				if a, b := runDigest(t, with), runDigest(t, without); a != b {
					t.Errorf("%s: the prefilter changes the result:\n%s", label, firstDifference(a, b))
				}
				compared++
			}
		}
	}
	t.Logf("compared %d runs over %d trees", compared, len(trees))
}

// unhintedKernels is the kernel stage reading every Python file itself, as
// if the analyze stage had not scanned for its needles.
type unhintedKernels struct{ *KernelStage }

func (u unhintedKernels) Run(ctx context.Context, r *Run) error {
	for _, f := range r.Files {
		f.kernelScan = 0
	}
	return u.KernelStage.Run(ctx, r)
}

// bareRules copies rules with their needles removed.
func bareRules(rules []*rule.Rule) []*rule.Rule {
	out := make([]*rule.Rule, len(rules))
	for i, r := range rules {
		c := *r
		c.Needles = nil
		out[i] = &c
	}
	return out
}

// corpusTree writes every rule's example and every golden input into one
// temporary tree, one file each.
func corpusTree(t *testing.T) string {
	dir := t.TempDir()
	n := 0
	write := func(name string, src []byte) {
		n++
		p := filepath.Join(dir, fmt.Sprintf("f%04d_%s.py", n, name))
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range defaultRules() {
		if r.Example.Before != "" {
			write(strings.ReplaceAll(r.Name, "-", "_"), []byte(r.Example.Before))
		}
	}
	inputs, _ := filepath.Glob(filepath.Join("..", "transforms", "*", "testdata", "*", "input.py"))
	if len(inputs) < 50 {
		t.Fatalf("found %d golden inputs; the goldens moved?", len(inputs))
	}
	for _, in := range inputs {
		src, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		write(strings.NewReplacer("-", "_", ".", "_").Replace(filepath.Base(filepath.Dir(in))), src)
	}
	return dir
}

// stringsEdited copies the Python files of dir into a new temporary tree,
// each code string (lexPython) whose content starts with "cuda" rewritten by
// edit (its content up to the closing quote in, the new one out).
func stringsEdited(t *testing.T, dir string, edit func([]byte) []byte) string {
	out := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(dir, "*.py"))
	edited := 0
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, strs, _ := lexPython(src)
		var b []byte
		last := 0
		for _, cs := range strs {
			end := cs.content
			for end < cs.end && src[end] != src[cs.content-1] {
				end++
			}
			if !bytes.HasPrefix(src[cs.content:end], []byte("cuda")) {
				continue
			}
			b = append(append(b, src[last:cs.content]...), edit(append([]byte(nil), src[cs.content:end]...))...)
			last = end
			edited++
		}
		b = append(b, src[last:]...)
		if err := os.WriteFile(filepath.Join(out, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if edited < 50 {
		t.Fatalf("edited only %d strings; the goldens lost their device strings?", edited)
	}
	return out
}

// dropUnparsedSyntaxErrors removes, from a run without needles, the syntax
// errors of files the prefilter passes to no rule (the run with needles never
// parses them).
func dropUnparsedSyntaxErrors(t *testing.T, r *Run, root string, pf *prefilter) {
	for _, f := range r.Files {
		if f.Skipped != CodeSyntaxError || f.Lang != LangPython {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if sel, _ := pf.selectPython(src); len(sel) > 0 {
			continue
		}
		f.Skipped = ""
		var keep []Diagnostic
		for _, d := range f.Diagnostics {
			if d.Code != CodeSyntaxError {
				keep = append(keep, d)
			}
		}
		f.Diagnostics = keep
	}
}

// runDigest renders what a report and a patch are made of, one file a line.
func runDigest(t *testing.T, r *Run) string {
	var b bytes.Buffer
	for _, f := range r.Files {
		j, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s changed=%v\n", j, f.Changed())
	}
	for _, k := range r.Kernels {
		j, _ := json.Marshal(k)
		fmt.Fprintf(&b, "kernel %s\n", j)
	}
	for _, d := range r.Diagnostics {
		j, _ := json.Marshal(d)
		fmt.Fprintf(&b, "diag %s\n", j)
	}
	b.Write(r.Patch())
	return b.String()
}

func firstDifference(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d\n  with needles:    %.400s\n  without needles: %.400s", i+1, x, y)
		}
	}
	return "(none)"
}
