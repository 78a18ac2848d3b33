package validators

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFixtureKernels validates every fixture kernel's correct candidate
// (full protocol: must be proven and compile for every default TPU chip)
// and every mutant (quick mode: must be rejected with the reason in its
// "# expect:" line), and prints the mutant kill rate and the false
// rejections.
func TestFixtureKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := testPython(t)
	dir := filepath.Join("..", "fixtures", "kernels")
	fs, err := LoadFixtures(dir)
	if err != nil || len(fs) == 0 {
		t.Fatalf("no fixtures under %s: %v", dir, err)
	}
	ctx := context.Background()
	noSB := (&sbWrap{}).check() != nil
	type job struct {
		fixture, name, expect string
		full                  bool
	}
	var reqs []Request
	var jobs []job
	var quickReqs []Request
	var quickJobs []job
	for _, f := range fs {
		work := t.TempDir()
		req, how, err := FixtureReference(ctx, f, noSB, work)
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		t.Logf("%s: reference via %s %s", f.Name, how, req.ReferenceNote)
		cand, err := os.ReadFile(f.Candidate)
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		r := req
		r.Candidate = cand
		reqs = append(reqs, r)
		jobs = append(jobs, job{f.Name, "candidate.py", "", true})
		for _, m := range f.Mutants {
			src, err := os.ReadFile(m.Path)
			if err != nil {
				t.Fatal(err)
			}
			r := req
			r.Candidate = src
			quickReqs = append(quickReqs, r)
			quickJobs = append(quickJobs, job{f.Name, filepath.Base(m.Path), m.Expect, false})
		}
	}
	full := ValidateAll(ctx, reqs, Options{Python: py, NoSandbox: noSB, Timeout: 180 * time.Second}, 0)
	quick := ValidateAll(ctx, quickReqs, Options{Python: py, NoSandbox: noSB, Quick: true, Timeout: 120 * time.Second}, 0)
	falseRej := 0
	for i, r := range full {
		j := jobs[i]
		if r.Err != nil || !r.Verdict.Proven() {
			falseRej++
			if r.Err != nil {
				t.Errorf("%s/%s: %v", j.fixture, j.name, r.Err)
			} else {
				t.Errorf("%s/%s: %s %s\n%s", j.fixture, j.name, r.Verdict.Verdict, r.Verdict.Reason, r.Verdict.Output)
			}
			continue
		}
		// Every correct candidate compiles for every default chip.
		var chips []string
		for _, c := range DefaultTPUChips {
			cc, ok := r.Verdict.TPU[c]
			if !ok || !cc.Compiled {
				falseRej++
				t.Errorf("%s/%s: not compiled for %s: %+v", j.fixture, j.name, c, cc)
				continue
			}
			chips = append(chips, sprintf("%s %.2fs", c, cc.CompileS))
		}
		t.Logf("%s: proven in %.1fs (%d cases, ULP max %.0f; tpu compile %s)", j.fixture, r.Verdict.DurationS,
			r.Verdict.Stats.Cases, r.Verdict.Stats.ULPMax, strings.Join(chips, ", "))
	}
	killed, compileMutants := 0, 0
	for i, r := range quick {
		j := quickJobs[i]
		switch {
		case r.Err != nil:
			t.Errorf("%s/%s: %v", j.fixture, j.name, r.Err)
		case r.Verdict.Verdict == Proven:
			t.Errorf("%s/%s: mutant proven (expected %s)", j.fixture, j.name, j.expect)
		case r.Verdict.Code() != j.expect:
			t.Errorf("%s/%s: rejected with %q, expected %s", j.fixture, j.name, r.Verdict.Reason, j.expect)
		default:
			killed++
			if j.expect == "V-TPU-COMPILE" {
				compileMutants++
			}
		}
	}
	rate := 100.0
	if len(quick) > 0 {
		rate = 100 * float64(killed) / float64(len(quick))
	}
	msg := "mutant kill rate %d/%d = %.0f%% (%d by the TPU compile gate), false rejections %d"
	t.Logf(msg, killed, len(quick), rate, compileMutants, falseRej)
	os.Stdout.WriteString("validators: " + sprintf(msg, killed, len(quick), rate, compileMutants, falseRej) + "\n")
}
