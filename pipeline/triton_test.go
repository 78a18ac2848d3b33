package pipeline_test

import (
	"path/filepath"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
)

// TestTritonE2E migrates the Triton e2e projects (a flat 1-D kernel; RMSNorm
// row kernels under an autograd.Function; an autotuned column-tiled kernel
// with a flag its wrapper computes) with drafting, validation against
// Triton's interpreter and wiring: every kernel is proven and wired at its
// launch, no PKN007 is left, the patch equals <name>.want.patch, a second
// migrate of the migrated tree changes nothing, every generated file is ruff
// clean (checkE2E), and check_triton_e2e.py
// accepts the tree (imports with jax/torch_tpu blocked, the Triton path on
// the CPU unchanged, the TPU branch's glue storing what the launch stores,
// every op built by the real jax_op).
func TestTritonE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	for _, name := range []string{"flat", "rows", "tiles", "halves"} {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join("..", "fixtures", "triton_e2e", name)
			run := migrateKernels(t, root)
			allProvenAndWired(t, run, "PKN007")
			for _, k := range run.Kernels {
				if !k.Emulated || k.Captured == 0 {
					t.Errorf("kernel %s: the interpreter run of the original was not recorded (emulated %v, captured %d)", k.Name, k.Emulated, k.Captured)
				}
			}
			checkE2E(t, run, e2eCheck{
				golden: filepath.Join("..", "fixtures", "triton_e2e", name+".want.patch"), rerun: "TritonE2E",
				checker: "../fixtures/triton_e2e/check_triton_e2e.py", name: name,
				second: func(t *testing.T, dir string) *pipeline.Run { return migrateKernels(t, dir) },
			})
		})
	}
}
