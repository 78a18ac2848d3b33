package validators

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/transforms/triton"
)

// tritonPython is the venv interpreter with torch and triton; a missing one
// fails under PALLASIFY_REQUIRE_STACK=1 and skips otherwise.
func tritonPython(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PALLASIFY_PYTHON")
	if p == "" {
		p, _ = filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("PALLASIFY_REQUIRE_STACK is set but there is no Python at %s", p)
		}
		t.Skip("no Python venv (run make venv)")
	}
	return p
}

func loadTritonFixtures(t *testing.T) []TritonFixture {
	t.Helper()
	fs, err := LoadTritonFixtures(filepath.Join("..", "fixtures", "triton"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) < 8 {
		t.Fatalf("%d Triton fixtures, want at least 8", len(fs))
	}
	return fs
}

// TestTritonProbe runs one case of every Triton fixture through its wrapper
// in the interpreter and checks the recorded launch: the kernel the spec
// names, a grid, and the constexpr block sizes the wrapper computed.
func TestTritonProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := tritonPython(t)
	noSB := (&sbWrap{}).check() != nil
	for _, f := range loadTritonFixtures(t) {
		p, err := ProbeTriton(context.Background(), f.Spec, f.Call, Options{Python: py, NoSandbox: noSB, Timeout: 120 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if !p.OK {
			t.Errorf("%s: interpreter did not run the wrapper: %s", f.Name, p.Error)
			continue
		}
		var found *TritonLaunch
		for i := range p.Launches {
			if p.Launches[i].Kernel == f.Spec.Name {
				found = &p.Launches[i]
			}
		}
		if found == nil {
			t.Errorf("%s: no launch of %s recorded (%d launches)", f.Name, f.Spec.Name, len(p.Launches))
			continue
		}
		if len(found.Grid) == 0 || found.Grid[0] < 1 || len(found.Constexprs) == 0 {
			t.Errorf("%s: launch recorded without grid or constexprs: %+v", f.Name, found)
		}
		for name, v := range found.Args {
			if m, ok := v.(map[string]any); ok && m["tensor"] == true && m["strides"] == nil {
				t.Errorf("%s: tensor argument %s recorded without strides", f.Name, name)
			}
		}
		t.Logf("%s: %s grid %v constexprs %v libdevice %v", f.Name, found.Kernel, found.Grid, found.Constexprs, p.Libdevice)
	}
}

// TestTritonFixtures proves every Triton fixture's candidate against the
// original kernel run by the interpreter (full protocol) and checks that
// every mutant is rejected with its expected code (quick mode); it prints
// the kill rate.
func TestTritonFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := tritonPython(t)
	noSB := (&sbWrap{}).check() != nil
	only := os.Getenv("PALLASIFY_TRITON_FIXTURES") // comma-separated subset, for debugging
	type job struct{ fixture, name, expect string }
	var full, quick []Request
	var fullJobs, quickJobs []job
	for _, f := range loadTritonFixtures(t) {
		if only != "" && !slices.Contains(strings.Split(only, ","), f.Name) {
			continue
		}
		req, err := TritonRequest(f.Spec, f.Call, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		cand, err := os.ReadFile(f.Candidate)
		if err != nil {
			t.Fatal(err)
		}
		r := req
		r.Candidate = cand
		full = append(full, r)
		fullJobs = append(fullJobs, job{f.Name, "candidate.py", ""})
		if len(f.Mutants) < 3 {
			t.Errorf("%s: %d mutants, want at least 3", f.Name, len(f.Mutants))
		}
		for _, m := range f.Mutants {
			src, err := os.ReadFile(m.Path)
			if err != nil {
				t.Fatal(err)
			}
			r := req
			r.Candidate = src
			quick = append(quick, r)
			quickJobs = append(quickJobs, job{f.Name, filepath.Base(m.Path), m.Expect})
		}
	}
	ctx := context.Background()
	opt := Options{Python: py, NoSandbox: noSB, Timeout: 240 * time.Second}
	fres := ValidateAll(ctx, full, opt, 0)
	opt.Quick = true
	qres := ValidateAll(ctx, quick, opt, 0)
	falseRej := 0
	for i, r := range fres {
		j := fullJobs[i]
		if r.Err != nil || !r.Verdict.Proven() {
			falseRej++
			if r.Err != nil {
				t.Errorf("%s: %v", j.fixture, r.Err)
			} else {
				t.Errorf("%s: %s %s\n%s", j.fixture, r.Verdict.Verdict, r.Verdict.Reason, tailLines(r.Verdict.Output, 15))
			}
			continue
		}
		if chips, ok := compiledChips(r.Verdict); !ok {
			falseRej++
			t.Errorf("%s: proven but not compiled for every chip: %s", j.fixture, chips)
			continue
		}
		t.Logf("%s: proven against the interpreter in %.1fs (%d cases, ULP max %.0f), compiled for %s", j.fixture, r.Verdict.DurationS, r.Verdict.Stats.Cases, r.Verdict.Stats.ULPMax, strings.Join(DefaultTPUChips, ", "))
	}
	killed := 0
	for i, r := range qres {
		j := quickJobs[i]
		switch {
		case r.Err != nil:
			t.Errorf("%s/%s: %v", j.fixture, j.name, r.Err)
		case r.Verdict.Verdict == Proven:
			t.Errorf("%s/%s: mutant proven (expected %s)", j.fixture, j.name, j.expect)
		case r.Verdict.Code() != j.expect:
			t.Errorf("%s/%s: rejected with %q, expected %s\n%s", j.fixture, j.name, r.Verdict.Reason, j.expect, tailLines(r.Verdict.Output, 8))
		default:
			killed++
		}
	}
	rate := 100.0
	if len(qres) > 0 {
		rate = 100 * float64(killed) / float64(len(qres))
	}
	msg := sprintf("triton fixtures: %d/%d proven, mutant kill rate %d/%d = %.0f%%, false rejections %d",
		len(fres)-falseRej, len(fres), killed, len(qres), rate, falseRej)
	t.Log(msg)
	os.Stdout.WriteString("validators: " + msg + "\n")
}

// compiledChips reports whether the TPU compile gate compiled the verdict's
// candidate for every default chip, and what it says for those it did not.
func compiledChips(v *Verdict) (string, bool) {
	var bad []string
	for _, c := range DefaultTPUChips {
		cc, ok := v.TPU[c]
		if !ok || !cc.Compiled {
			bad = append(bad, sprintf("%s: %s", c, firstNonEmpty(cc.Error, v.Reason, "gate did not run")))
		}
	}
	return strings.Join(bad, "; "), len(bad) == 0
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestTritonRuleDrafts translates the fixture kernels by rules and proves
// every draft against the original kernel, isolated from its file and
// launched from the inferred spec in the interpreter.
func TestTritonRuleDrafts(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := tritonPython(t)
	noSB := (&sbWrap{}).check() != nil
	ctx := context.Background()
	inv, err := triton.Discover(ctx, filepath.Join("..", "fixtures", "triton"))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []Request
	var names []string
	refused := 0
	for _, k := range inv.Kernels {
		d := DraftTriton(ctx, inv, k)
		if d.Refusal != nil {
			refused++
			t.Logf("%s: refused: %v", k.Name, d.Refusal)
			continue
		}
		req, err := TritonRequest(d.Spec, d.Call, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		req.Candidate = d.Candidate
		reqs = append(reqs, req)
		names = append(names, k.Name)
	}
	if len(reqs) < 5 {
		t.Fatalf("%d fixture kernels drafted by rules, want at least 5", len(reqs))
	}
	proven := 0
	for i, r := range ValidateAll(ctx, reqs, Options{Python: py, NoSandbox: noSB, Timeout: 240 * time.Second}, 0) {
		switch {
		case r.Err != nil:
			t.Errorf("%s: %v", names[i], r.Err)
		case !r.Verdict.Proven():
			t.Errorf("%s: %s %s\n%s", names[i], r.Verdict.Verdict, r.Verdict.Reason, tailLines(r.Verdict.Output, 15))
		default:
			if chips, ok := compiledChips(r.Verdict); !ok {
				t.Errorf("%s: rule draft proven but not compiled for every chip: %s", names[i], chips)
				continue
			}
			proven++
			t.Logf("%s: rule draft proven in %.1fs (%d cases, ULP max %.0f), compiled for %s", names[i], r.Verdict.DurationS, r.Verdict.Stats.Cases, r.Verdict.Stats.ULPMax, strings.Join(DefaultTPUChips, ", "))
		}
	}
	msg := sprintf("triton rule drafts: %d of %d fixture kernels drafted, %d proven, %d refused", len(reqs), len(inv.Kernels), proven, refused)
	t.Log(msg)
	os.Stdout.WriteString("validators: " + msg + "\n")
}

// TestTritonCorpus measures the Triton path on a real repository named by
// PALLASIFY_TRITON_CORPUS (e.g. ../shared/corpus/liger-kernel; copied to a
// temporary directory first): kernels found, with launches, drafted by
// rules, run by the interpreter from the inferred spec, proven. It skips
// when the variable is unset (make test never needs the corpus).
func TestTritonCorpus(t *testing.T) {
	src := os.Getenv("PALLASIFY_TRITON_CORPUS")
	if src == "" {
		t.Skip("PALLASIFY_TRITON_CORPUS not set")
	}
	py := tritonPython(t)
	noSB := (&sbWrap{}).check() != nil
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	inv, err := triton.Discover(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var launched, helpers, drafted, ran, proven, compiled int
	refusals := map[string]int{}
	var reqs []Request
	var names []string
	for _, k := range inv.Kernels {
		if len(k.Launches) == 0 {
			if inv.CalledFromKernels(k) {
				helpers++
			}
			continue
		}
		launched++
		d := DraftTriton(ctx, inv, k)
		if d.Refusal != nil {
			code := d.Refusal.Error()
			if r, ok := triton.AsRefusal(d.Refusal); ok {
				code = r.Code
			}
			refusals[code]++
			t.Logf("%s %s: refused: %v", k.Path, k.Name, d.Refusal)
			continue
		}
		drafted++
		p, err := ProbeTriton(ctx, d.Spec, d.Call, Options{Python: py, NoSandbox: noSB, Timeout: 120 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !p.OK {
			t.Logf("%s %s: interpreter did not run it: %s", k.Path, k.Name, p.Error)
			continue
		}
		ran++
		req, err := TritonRequest(d.Spec, d.Call, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		req.Candidate = d.Candidate
		reqs = append(reqs, req)
		names = append(names, k.Path+" "+k.Name)
	}
	for i, r := range ValidateAll(ctx, reqs, Options{Python: py, NoSandbox: noSB, Timeout: 240 * time.Second}, 0) {
		switch {
		case r.Err != nil:
			t.Logf("%s: %v", names[i], r.Err)
		case r.Verdict.Proven():
			proven++
			chips, ok := compiledChips(r.Verdict)
			if ok {
				compiled++
				chips = "compiled for " + strings.Join(DefaultTPUChips, ", ")
			}
			t.Logf("%s: proven (%d cases, ULP max %.0f); %s", names[i], r.Verdict.Stats.Cases, r.Verdict.Stats.ULPMax, chips)
		default:
			t.Logf("%s: %s %s", names[i], r.Verdict.Verdict, r.Verdict.Reason)
		}
	}
	msg := sprintf("triton corpus %s: %d @triton.jit functions (%d helpers called from kernels), %d launched, %d drafted by rules, %d run by the interpreter, %d proven, %d of them compiled for %s; refusals %v",
		filepath.Base(src), len(inv.Kernels), helpers, launched, drafted, ran, proven, compiled, strings.Join(DefaultTPUChips, "/"), refusals)
	t.Log(msg)
	os.Stdout.WriteString("validators: " + msg + "\n")
}
