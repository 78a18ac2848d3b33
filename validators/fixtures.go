package validators

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// Fixture is one kernel under fixtures/kernels/<name>: spec.json,
// kernel.cu, reference.py, candidate.py and mutants/*.py whose first line
// says "# expect: V-<CODE>".
type Fixture struct {
	Name      string
	Dir       string
	Spec      *kernels.Spec
	Candidate string
	Mutants   []Mutant
}

// Mutant is a wrong candidate and the reason code it must be rejected with.
type Mutant struct {
	Path   string
	Expect string
}

var expectRe = regexp.MustCompile(`^#\s*expect:\s*(V-[A-Z-]+)\s*$`)

// LoadFixtures reads every fixture kernel under dir (sorted by name).
func LoadFixtures(dir string) ([]Fixture, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Fixture
	for _, e := range ents {
		d := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "spec.json")); err != nil {
			continue
		}
		spec, err := ReadSpec(filepath.Join(d, "spec.json"))
		if err != nil {
			return nil, err
		}
		f := Fixture{Name: e.Name(), Dir: d, Spec: spec, Candidate: filepath.Join(d, "candidate.py")}
		ms, _ := filepath.Glob(filepath.Join(d, "mutants", "*.py"))
		sort.Strings(ms)
		for _, m := range ms {
			code, err := expectedCode(m)
			if err != nil {
				return nil, err
			}
			f.Mutants = append(f.Mutants, Mutant{Path: m, Expect: code})
		}
		out = append(out, f)
	}
	return out, nil
}

func expectedCode(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	if sc.Scan() {
		if m := expectRe.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("%s: first line must be '# expect: V-<CODE>'", path)
}

// FixtureReference builds the fixture's reference: the kernel isolated by
// discovery and compiled with the emulator into workdir/ref.so; when that
// fails, reference.py with the reason (so is "" then).
func FixtureReference(ctx context.Context, f Fixture, noSandbox bool, workdir string) (req Request, how string, err error) {
	py := filepath.Join(f.Dir, "reference.py")
	src, tuErr := fixtureTU(ctx, f)
	if tuErr == nil {
		so, log, berr := BuildReference(ctx, noSandbox, workdir, src, f.Spec)
		if berr == nil {
			return Request{Spec: *f.Spec, ReferenceSO: so, KernelTU: src}, "emulator", nil
		}
		tuErr = fmt.Errorf("%w %s", berr, firstLine(log))
	}
	if _, err := os.Stat(py); err != nil {
		return Request{}, "", fmt.Errorf("fixture %s: no reference: %v; %w", f.Name, tuErr, err)
	}
	return Request{Spec: *f.Spec, ReferencePy: py, ReferenceNote: "emulator unavailable: " + firstLine(tuErr.Error())},
		"reference.py", nil
}

// fixtureTU isolates the fixture kernel with discovery (falls back to the
// whole kernel.cu, host code stripped by the emulator).
func fixtureTU(ctx context.Context, f Fixture) (string, error) {
	inv, _ := kernels.Discover(ctx, f.Dir, nil)
	if inv != nil {
		for _, k := range inv.Kernels {
			if k.Name == f.Spec.Name && k.Unit != nil {
				return k.Unit.Source, nil
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(f.Dir, "kernel.cu"))
	if err != nil {
		return "", errors.New("kernel not discovered and no kernel.cu")
	}
	return string(b), nil
}

// BenchResult is the full protocol's wall time for one fixture kernel.
type BenchResult struct {
	Kernel    string
	Reference string // emulator or reference.py
	Verdict   string
	Median    time.Duration
	Runs      []time.Duration
	// TPU is the last run's TPU compile gate, per chip.
	TPU map[string]ChipCompile
}

// TPULine renders the last run's compile time per chip.
func (r BenchResult) TPULine() string { return TPULine(r.TPU) }

// TPULine renders a TPU compile gate's time per chip ("v5e 0.21s, v6e
// 0.18s, ..."), with the message's first line for a chip that failed.
func TPULine(tpu map[string]ChipCompile) string {
	v := &Verdict{TPU: tpu}
	var parts []string
	for _, c := range v.TPUChips() {
		cc := tpu[c]
		if cc.Compiled {
			parts = append(parts, fmt.Sprintf("%s %.2fs", c, cc.CompileS))
		} else {
			parts = append(parts, fmt.Sprintf("%s FAILED (%s)", c, firstLine(cc.Error)))
		}
	}
	if len(parts) == 0 {
		return "not compiled for TPU"
	}
	return strings.Join(parts, ", ")
}

// BenchFixtures runs the full protocol on every fixture's correct candidate
// runs times (sequentially, uncached) and reports the median wall time.
func BenchFixtures(ctx context.Context, dir string, runs int, opt Options) ([]BenchResult, error) {
	fs, err := LoadFixtures(dir)
	if err != nil {
		return nil, err
	}
	if runs <= 0 {
		runs = 3
	}
	opt.CacheDir = ""
	var out []BenchResult
	for _, f := range fs {
		work, err := os.MkdirTemp("", "pallasify-bench-")
		if err != nil {
			return nil, err
		}
		req, how, err := FixtureReference(ctx, f, opt.NoSandbox, work)
		if err != nil {
			os.RemoveAll(work)
			return nil, err
		}
		cand, err := os.ReadFile(f.Candidate)
		if err != nil {
			os.RemoveAll(work)
			return nil, err
		}
		req.Candidate = cand
		r := BenchResult{Kernel: f.Name, Reference: how}
		for i := 0; i < runs; i++ {
			start := time.Now()
			v, err := Validate(ctx, req, opt)
			if err != nil {
				os.RemoveAll(work)
				return nil, err
			}
			r.Runs = append(r.Runs, time.Since(start))
			r.Verdict, r.TPU = v.Verdict, v.TPU
		}
		os.RemoveAll(work)
		s := append([]time.Duration(nil), r.Runs...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		r.Median = s[len(s)/2]
		out = append(out, r)
	}
	return out, nil
}
