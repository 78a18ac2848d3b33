package triton_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/triton"
)

// TestWireLazyDirectory: wiring a kernel makes every Python file beside the
// ops module import triton lazily (the launching file and a helper module
// it imports), and leaves the files of other directories alone.
func TestWireLazyDirectory(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{
		"pkg/__init__.py": "",
		"pkg/util.py":     "import triton\n\n\ndef block(n):\n    return triton.next_power_of_2(n)\n",
		"pkg/ops.py": `import torch
import triton
import triton.language as tl

from .util import block


@triton.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def twice(x):
    out = torch.empty_like(x)
    n = x.numel()
    twice_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out
`,
		"other/x.py": "import triton\n",
	}
	bs := map[string][]byte{}
	var py []string
	for p, s := range files {
		bs[p] = []byte(s)
		py = append(py, p)
	}
	inv, err := triton.DiscoverFiles(ctx, bs)
	if err != nil {
		t.Fatal(err)
	}
	k := inv.Kernel("pkg/ops.py", "twice_kernel")
	a, src, err := triton.Translate(ctx, inv, k)
	if err != nil {
		t.Fatal(err)
	}
	spec, call, err := triton.Spec(a)
	if err != nil {
		t.Fatal(err)
	}
	wk := triton.WireKernel{Kernel: k, ID: spec.ID, Spec: spec, Call: call, Mode: a.Mode, Block: a.Block,
		Module: string(src), Verdict: "PROVEN (test)"}
	read := func(p string) ([]byte, bool) { b, ok := bs[p]; return b, ok }
	out, wired, probs := triton.Wire(ctx, []triton.WireKernel{wk}, read, py)
	if len(probs) > 0 || len(wired) != 1 {
		t.Fatalf("wired %v, problems %v", wired, probs)
	}
	got := map[string]string{}
	for _, f := range out {
		got[f.Path] = string(f.Content)
	}
	for _, p := range []string{"pkg/ops.py", "pkg/util.py"} {
		if !strings.Contains(got[p], "try:\n    import triton\n") || !strings.Contains(got[p], `    triton = _missing_triton("triton")`) {
			t.Errorf("%s does not import triton lazily:\n%s", p, got[p])
		}
	}
	if _, ok := got["other/x.py"]; ok {
		t.Errorf("a file of another directory was rewritten:\n%s", got["other/x.py"])
	}
	if !strings.Contains(got["pkg/_pallas_triton_ops.py"], "def missing_triton(name):") {
		t.Error("the ops module has no missing_triton")
	}
}
