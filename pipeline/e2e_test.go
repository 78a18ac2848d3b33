package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
)

// e2eCheck is how an end-to-end test holds a migration with kernels to its
// fixture: the patch equals the golden, the migrated tree migrated again
// changes nothing (and, unless changesOnly, reports nothing new), every
// file the migration generated is ruff clean (pipeline.RuffClean), what it
// wrote into the user's own files is as ruff format writes it
// (pipeline.InsertionsFormatted), and the
// fixture's checker script accepts the migrated tree under the real stack.
type e2eCheck struct {
	golden      string                                       // the want.patch file
	rerun       string                                       // the -run pattern that regenerates golden
	checker     string                                       // the checker script: python checker DIR name
	name        string                                       // the fixture's name for the checker
	second      func(t *testing.T, dir string) *pipeline.Run // the second migrate, over the migrated tree
	changesOnly bool                                         // the second pass is held to changing no file only
}

// A proof's error statistics in a generated module's header (the verdict
// line of pipeline/draft.go, wrapped at any space by the docstring) are, within
// the tolerance the proof allows, the host CPU's rounding: XLA's CPU code and
// NumPy's reductions differ with its vector units (the golden of
// triton_e2e/rows has max rel 3.08e-07 and ULP p99 3 where an AVX-512 host
// measures 2.95e-07 and 2). hostNeutral masks those numbers, and the line
// count of a new file's hunk that their width can change, so the golden holds
// every other byte of the patch; mismatches (0 in a proof) stay.
var (
	// the words of the statistics, any space of which may be a docstring line break
	proofStats = regexp.MustCompile(strings.ReplaceAll(
		`max abs [^\s,]+, max rel [^\s,]+, ULP p99 \d+ max \d+, mismatches`, " ", `(?: |\n\+ +)`))
	newFileHunk = regexp.MustCompile(`(?m)^@@ -0,0 \+1,\d+ @@`)
)

func hostNeutral(patch []byte) []byte {
	patch = proofStats.ReplaceAll(patch, []byte("max abs _, max rel _, ULP p99 _ max _, mismatches"))
	return newFileHunk.ReplaceAll(patch, []byte("@@ -0,0 +1,_ @@"))
}

// checkE2E runs c's checks on run and returns the directory the migrated
// tree was written to (for a test's further checks).
func checkE2E(t *testing.T, run *pipeline.Run, c e2eCheck) string {
	t.Helper()
	py := e2ePython(t)
	patch := run.Patch()
	if *updateE2E {
		if err := os.WriteFile(c.golden, patch, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(c.golden)
	if err != nil {
		t.Fatalf("%v (go test ./pipeline -run %s -update-e2e)", err, c.rerun)
	}
	if !bytes.Equal(hostNeutral(patch), hostNeutral(want)) {
		t.Errorf("patch differs from %s (go test ./pipeline -run %s -update-e2e):\n%s", c.golden, c.rerun, patch)
	} else if !bytes.Equal(patch, want) {
		t.Logf("%s: equal but for the proofs' error statistics, which are this host's rounding", c.golden)
	}
	dir := t.TempDir()
	if err := pipeline.WriteTree(context.Background(), run, dir); err != nil {
		t.Fatal(err)
	}
	second := c.second(t, dir)
	if c.changesOnly {
		for _, f := range second.Files {
			if f.Changed() {
				t.Errorf("second pass changes %s:\n%s", f.Path, pipeline.FileDiff(f))
			}
		}
	} else {
		for _, n := range pipeline.SecondPassNews(run, second) {
			t.Errorf("second pass (kernels included): %s", n)
		}
	}
	pipeline.RuffClean(t, py, pipeline.GeneratedPaths(run, dir))
	pipeline.InsertionsFormatted(t, py, run, dir)
	out, err := exec.Command(py, c.checker, dir, c.name).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		stackMissing(t, strings.TrimSpace(string(out)))
	}
	if err != nil {
		t.Fatalf("migrated tree check: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	return dir
}

// allProvenAndWired fails t unless run found kernels, every one is proven
// with a module, and no file carries a draft diagnostic other than
// "proven" or one of the codes in also.
func allProvenAndWired(t *testing.T, run *pipeline.Run, also ...string) {
	t.Helper()
	if len(run.Kernels) == 0 {
		t.Fatal("no kernels found")
	}
	for _, k := range run.Kernels {
		if k.Draft == nil || k.Draft.Verdict != pipeline.VerdictProven || k.Draft.Module == "" {
			t.Errorf("kernel %s: %+v", k.Name, k.Draft)
		}
	}
	for _, f := range run.Files {
		for _, d := range f.Diagnostics {
			if slices.Contains(also, d.Code) || (strings.HasPrefix(d.Code, "PDR") && d.Code != pipeline.CodeDraftProven) {
				t.Errorf("%s: %s %s", f.Path, d.Code, d.Message)
			}
		}
	}
}

func TestHostNeutral(t *testing.T) {
	a := "@@ -0,0 +1,140 @@\n+    cols=97,rows=130): max abs 3.52e+14, max rel 3.08e-07, ULP p99 3 max 4, mismatches 0\n"
	b := "@@ -0,0 +1,141 @@\n+    cols=97,rows=130): max abs 3.5e+14, max rel 2.95e-07, ULP p99 2 max\n+    4, mismatches 0\n"
	if !bytes.Equal(hostNeutral([]byte(a)), hostNeutral([]byte(b))) {
		t.Errorf("host-dependent statistics not masked:\n%s\n%s", hostNeutral([]byte(a)), hostNeutral([]byte(b)))
	}
	// Everything else still counts: the case count, the shapes, mismatches, an old file's hunk.
	for _, c := range []string{
		strings.Replace(a, "cols=97", "cols=98", 1),
		strings.Replace(a, "mismatches 0", "mismatches 1", 1),
		strings.Replace(a, "-0,0 +1,140", "-1,3 +1,4", 1),
	} {
		if bytes.Equal(hostNeutral([]byte(a)), hostNeutral([]byte(c))) {
			t.Errorf("masked more than the statistics: %q", c)
		}
	}
}
