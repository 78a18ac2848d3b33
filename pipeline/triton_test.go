package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
)

// TestTritonE2E migrates the Triton e2e projects (a flat 1-D kernel; RMSNorm
// row kernels under an autograd.Function; an autotuned column-tiled kernel
// with a flag its wrapper computes) with drafting, validation against
// Triton's interpreter and wiring: every kernel is proven and wired at its
// launch, no PKN007 is left, the patch equals <name>.want.patch, a second
// migrate of the migrated tree changes nothing, and check_triton_e2e.py
// accepts the tree (imports with jax/torch_tpu blocked, the Triton path on
// the CPU unchanged, the TPU branch's glue storing what the launch stores,
// every op built by the real jax_op).
func TestTritonE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := e2ePython(t)
	for _, name := range []string{"flat", "rows", "tiles", "halves"} {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join("..", "fixtures", "triton_e2e", name)
			run := migrateKernels(t, root)
			if len(run.Kernels) == 0 {
				t.Fatal("no kernels found")
			}
			for _, k := range run.Kernels {
				if k.Draft == nil || k.Draft.Verdict != pipeline.VerdictProven || k.Draft.Module == "" {
					t.Errorf("kernel %s: %+v", k.Name, k.Draft)
				}
				if !k.Emulated || k.Captured == 0 {
					t.Errorf("kernel %s: the interpreter run of the original was not recorded (emulated %v, captured %d)", k.Name, k.Emulated, k.Captured)
				}
			}
			for _, f := range run.Files {
				for _, d := range f.Diagnostics {
					if d.Code == "PKN007" || (strings.HasPrefix(d.Code, "PDR") && d.Code != pipeline.CodeDraftProven) {
						t.Errorf("%s: %s %s", f.Path, d.Code, d.Message)
					}
				}
			}
			patch := run.Patch()
			wantFile := filepath.Join("..", "fixtures", "triton_e2e", name+".want.patch")
			if *updateE2E {
				if err := os.WriteFile(wantFile, patch, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("%v (go test ./pipeline -run TritonE2E -update-e2e)", err)
			}
			if !bytes.Equal(patch, want) {
				t.Errorf("patch differs from %s (go test ./pipeline -run TritonE2E -update-e2e):\n%s", wantFile, patch)
			}
			dir := t.TempDir()
			if err := pipeline.WriteTree(context.Background(), run, dir); err != nil {
				t.Fatal(err)
			}
			second := migrateKernels(t, dir)
			for _, n := range pipeline.SecondPassNews(run, second) {
				t.Errorf("second pass (kernels included): %s", n)
			}
			for _, f := range second.Files {
				if f.Changed() {
					t.Errorf("second pass changes %s", f.Path)
				}
			}
			out, err := exec.Command(py, "../fixtures/triton_e2e/check_triton_e2e.py", dir, name).CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 3 {
				stackMissing(t, strings.TrimSpace(string(out)))
			}
			if err != nil {
				t.Fatalf("migrated tree check: %v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}
