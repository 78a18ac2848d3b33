package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
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
	if !bytes.Equal(patch, want) {
		t.Errorf("patch differs from %s (go test ./pipeline -run %s -update-e2e):\n%s", c.golden, c.rerun, patch)
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
