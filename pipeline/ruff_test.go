package pipeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RuffClean holds files to what a reviewer accepts of generated Python: the
// ruff pinned in the venv next to py finds nothing with `ruff check` (F, E,
// W, B: pyflakes, pycodestyle, bugbear) and `ruff format --check` changes
// nothing, both at line length 100. Without that ruff the test fails under
// PALLASIFY_REQUIRE_STACK and skips otherwise. The e2e tests (TestE2EFixtures,
// TestTritonE2E, TestTritonLLM*) call it on every file a migration generated,
// TestHelperModulesRuffClean on the helper modules.
func RuffClean(t *testing.T, py string, files []string) {
	t.Helper()
	ruff := filepath.Join(filepath.Dir(py), "ruff")
	if _, err := os.Stat(ruff); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("the pinned ruff is missing next to the venv's python: %v", err)
		}
		t.Skipf("no pinned ruff next to the venv's python: %v", err)
	}
	if len(files) == 0 {
		t.Fatal("no generated files to check")
	}
	common := []string{"--isolated", "--line-length", "100"}
	for _, args := range [][]string{{"check", "--select", "F,E,W,B", "--output-format", "concise"}, {"format", "--check", "--diff"}} {
		cmd := exec.Command(ruff, append(append(args, common...), files...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("ruff %s on %v: %v\n%s", args[0], files, err, b)
		}
	}
}

// GeneratedPaths are the files of run that pallasify generated (helper
// modules, kernel modules, ops modules), as paths under dir, where the run
// was written.
func GeneratedPaths(run *Run, dir string) []string {
	var out []string
	for _, f := range run.Files {
		if f.Generated {
			out = append(out, filepath.Join(dir, filepath.FromSlash(f.Path)))
		}
	}
	return out
}
