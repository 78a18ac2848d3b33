package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

func TestLaunchSites(t *testing.T) {
	dir := t.TempDir()
	cu := `__global__ void add_k(const float* a, float* b, int n) { }
void host(float* a, float* b, int n) {
  add_k<<<(n + 255) / 256, 256, 0,
          stream>>>(a, b,
                    n);
  add_k<<<1, 1>>>(a, b, 1);
}
`
	py := "import cupy\nk = cupy.RawKernel(src, 'add_k')\ndef add_k(x):\n    pass\nadd_k((4,), (256,), (a, b, n))\n"
	for name, text := range map[string]string{"ops.cu": cu, "use.py": py} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k := &kernels.Kernel{Name: "add_k", Path: "ops.cu", ReferencedBy: []string{"use.py", "missing.py"}}
	got := LaunchSites(dir, k)
	if len(got) != 3 {
		t.Fatalf("%d sites: %q", len(got), got)
	}
	if !strings.HasPrefix(got[0], "ops.cu:3: add_k<<<") || !strings.Contains(got[0], "n);") {
		t.Errorf("multi-line launch: %q", got[0])
	}
	if !strings.HasPrefix(got[2], "use.py:5: add_k((4,)") {
		t.Errorf("python launch: %q", got[2])
	}
}
