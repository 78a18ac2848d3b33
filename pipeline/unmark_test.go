package pipeline

import (
	"strings"
	"testing"
)

// TestUnmarkWired: the custom-kernel rule's --mark comment leaves a file
// whose kernel is proven and wired (the report counts that site fixed), and
// stays where a kernel of the file is not wired.
func TestUnmarkWired(t *testing.T) {
	src := "import torch\n    # pallasify: PDX006 custom CUDA kernel (load_inline): cannot run on TPU\n_ext = load_inline(name='x')\n# pallasify: PDV002 other site\n"
	run := func(verdict, module string) *Run {
		return &Run{
			Files: []*File{{Path: "pkg/ops.py", Lang: LangPython, Updated: []byte(src)}},
			Kernels: []*Kernel{{ID: "k-1", Name: "k", Path: "pkg/ops.py",
				Draft: &Draft{Verdict: verdict, Module: module}}},
		}
	}
	r := run(VerdictProven, "pkg/_pallas_k.py")
	unmarkWired(r)
	got := string(r.Files[0].Updated)
	if strings.Contains(got, "PDX006") || !strings.Contains(got, "PDV002 other site") || !strings.Contains(got, "_ext = load_inline") {
		t.Errorf("wired kernel: got\n%s", got)
	}
	r = run(VerdictProven, "") // proven, not wired
	unmarkWired(r)
	if string(r.Files[0].Updated) != src {
		t.Errorf("an unwired kernel lost its mark:\n%s", r.Files[0].Updated)
	}
}
