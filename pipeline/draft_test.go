package pipeline_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/validators"
)

var updateE2E = flag.Bool("update-e2e", false, "rewrite fixtures/e2e/*/want.patch")

func e2ePython(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		return p
	}
	p, _ := filepath.Abs("../.venv/bin/python")
	if _, err := os.Stat(p); err != nil {
		stackMissing(t, "no Python venv (make venv)")
	}
	return p
}

// stackMissing fails the test under PALLASIFY_REQUIRE_STACK=1 (make test)
// and skips it otherwise.
func stackMissing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
		t.Fatalf("%s (PALLASIFY_REQUIRE_STACK=1: the real stack must be there)", why)
	}
	t.Skip(why)
}

func migrateKernels(t *testing.T, root string, drafters ...pipeline.KernelDrafter) *pipeline.Run {
	t.Helper()
	py := e2ePython(t)
	sv := validators.NewStageValidator(validators.Options{Python: py, Timeout: 240 * time.Second})
	t.Cleanup(func() { sv.Close() })
	w := pipeline.NewKernelWork(sv, drafters...)
	w.Wire = true
	opts := pipeline.Options{Root: root, Version: "test"}
	w.Install(&opts)
	run, err := pipeline.Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestE2EFixtures migrates the end-to-end projects with drafting,
// validation and wiring: every kernel must be proven and wired, the patch
// must equal want.patch, a second migrate over the migrated tree (kernels
// included) must change nothing and report nothing new, every generated file must be ruff clean
// (checkE2E), and check_e2e.py must accept the migrated tree under the real torch + torch_tpu + jax: it compiles; the package imports
// in a process where jax and torch_tpu cannot be imported (and imports
// neither); every op is built by the real jax_op and its meta output has the
// original op's shape and dtype; every module's PALLASIFY_KERNEL header
// reproduces its validated case; the JAX functions match the documented
// reference in interpret mode.
func TestE2EFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := e2ePython(t)
	for _, name := range []string{"inline_act", "method_ext", "torchlib_act", "chain_gelu", "torchlib_split", "row_stats", "registry_loss", "registry_seq", "registry_branch", "half_act"} {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join("..", "fixtures", "e2e", name)
			run := migrateKernels(t, root)
			allProvenAndWired(t, run)
			dir := checkE2E(t, run, e2eCheck{
				golden: filepath.Join("..", "fixtures", "e2e", name+".want.patch"), rerun: "E2E",
				checker: "../fixtures/e2e/check_e2e.py", name: name,
				second: func(t *testing.T, dir string) *pipeline.Run { return migrateKernels(t, dir) },
			})
			mods := pipeline.GeneratedPaths(run, dir)
			out, err := exec.Command(py, append([]string{"../transforms/pallas/testdata/check_api.py"}, mods...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("API check: %v\n%s", err, out)
			}
		})
	}
}

// TestBrokenDraftNeverWired breaks every rule translation through the
// test-only hook: the validator rejects it and nothing is written.
func TestBrokenDraftNeverWired(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	breakIt := func(m string) string {
		return strings.ReplaceAll(m, "jnp.exp(", "jnp.exp2(")
	}
	run := migrateKernels(t, filepath.Join("..", "fixtures", "e2e", "inline_act"), pipeline.RuleDrafter{Mutate: breakIt})
	if len(run.Kernels) != 1 {
		t.Fatalf("%d kernels", len(run.Kernels))
	}
	d := run.Kernels[0].Draft
	if d == nil || d.Verdict != pipeline.VerdictRejected || d.Module != "" {
		t.Fatalf("broken draft: %+v", d)
	}
	for _, f := range run.Files {
		if f.Generated || (f.Changed() && strings.Contains(string(f.Updated), "_pallas_")) {
			t.Errorf("%s was written from a rejected draft", f.Path)
		}
	}
	t.Logf("rejected: %s", d.Reason)
}
