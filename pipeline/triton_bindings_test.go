package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// TestKernelStageTritonBindings runs the kernel stage on
// fixtures/triton_bindings: Triton kernels bound by a call (kern =
// triton.jit(fn), inline, under autotune, with do_not_specialize) are in
// the inventory, and every kernel, those launched through a local alias, a
// dict by dtype or self._kernel too, is launched: none is "never launched"
// and each gets the Triton stage's draft (a rule candidate or a coded
// refusal) with its launches counted.
func TestKernelStageTritonBindings(t *testing.T) {
	root := filepath.Join("..", "fixtures", "triton_bindings")
	paths, err := kernels.ListFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	r := &Run{Root: root}
	for _, p := range paths {
		r.Files = append(r.Files, &File{Path: p, Lang: langOf(p)})
	}
	st := NewKernelStage()
	if err := st.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range r.Kernels {
		names = append(names, k.Name)
		ik := st.Lookup(k.ID)
		if ik == nil {
			t.Fatalf("kernel %s not in the inventory", k.Name)
		}
		if k.Name == "cube" { // the helper: inlined into cube_kernel, which imports it
			if !strings.Contains(ik.Reason, "helper, inlined") {
				t.Errorf("helper cube: reason %q", ik.Reason)
			}
			continue
		}
		if strings.Contains(ik.Reason, "never launched") || ik.Launches == 0 {
			t.Errorf("kernel %s: %d launches, reason %q", k.Name, ik.Launches, ik.Reason)
		}
		if st.Triton.Draft(k.ID) == nil {
			t.Errorf("kernel %s: no Triton draft", k.Name)
		}
	}
	sort.Strings(names)
	want := "_neg _relu _scale _shift abs_f32_kernel abs_f64_kernel cube cube_kernel square_kernel"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("kernels %s, want %s", got, want)
	}
	for _, f := range r.Files {
		for _, d := range f.Diagnostics {
			if d.Code == kernels.CodeInventory && !strings.Contains(d.Message, "kernel cube listed") {
				t.Errorf("%s: %s %s", f.Path, d.Code, d.Message)
			}
		}
	}
}

// TestTritonBindingsFixtureRuns: fixtures/triton_bindings is real Triton:
// its check.py runs every op under Triton's interpreter on the CPU and
// compares it with torch.
func TestTritonBindingsFixtureRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Triton's interpreter (-short)")
	}
	py := python(t)
	cmd := exec.Command(py, "check.py")
	cmd.Dir = filepath.Join("..", "fixtures", "triton_bindings")
	cmd.Env = append(os.Environ(), "TRITON_INTERPRET=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK triton_bindings") {
		t.Fatalf("check.py: %v\n%s", err, out)
	}
}
