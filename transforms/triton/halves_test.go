package triton

import (
	"context"
	"strings"
	"testing"
)

const halvesSrc = `import torch
import triton
import triton.language as tl


@triton.jit
def glu(x_ptr, out_ptr, x_stride, out_stride, n: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * x_stride
    out_ptr += row * out_stride
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    a = tl.load(x_ptr + cols, mask=mask, other=0.0)
    b = tl.load(x_ptr + n + cols, mask=mask, other=0.0)
    tl.store(out_ptr + cols, a * b, mask=mask)


@triton.jit
def half_store(x_ptr, y_ptr, stride, n: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    a = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + n + cols, a, mask=mask)


def launch(x, y):
    n = x.shape[1] // 2
    out = torch.empty(x.shape[0], n)
    glu[(x.shape[0],)](x, out, x.stride(0), out.stride(0), n=n, BLOCK=triton.next_power_of_2(n))
    half_store[(x.shape[0],)](x, y, x.stride(0), n=n, BLOCK=triton.next_power_of_2(n))
`

// TestHalves: ptr + n + cols over a row of stride 2 * n is the row's second
// half: the tensor is (rows, 2 * cols), its stride 2 * cols, the kernel
// slices the block; storing one half of an output only is refused.
func TestHalves(t *testing.T) {
	ctx := context.Background()
	inv, err := DiscoverFiles(ctx, map[string][]byte{"m.py": []byte(halvesSrc)})
	if err != nil {
		t.Fatal(err)
	}
	a, src, err := Translate(ctx, inv, inv.Kernel("m.py", "glu"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Ptrs[0].Name != "x_ptr" || a.Ptrs[0].Segs != 2 || a.Ptrs[1].Segs != 0 {
		t.Errorf("halves: %+v", a.Ptrs)
	}
	if a.Sizes["x_stride"] != "2 * cols" || a.Sizes["out_stride"] != "cols" {
		t.Errorf("strides: %v", a.Sizes)
	}
	for _, want := range []string{"x_ptr_ref[:, : x_ptr_ref.shape[1] // 2]", "x_ptr_ref[:, x_ptr_ref.shape[1] // 2 :]",
		"pl.BlockSpec((bm, 2 * cp)", "reshape(rows_p, 2 * cp)"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("candidate lacks %q:\n%s", want, src)
		}
	}
	s, call, err := Spec(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Params[0].Shape, ","); got != "rows,2 * cols" {
		t.Errorf("x_ptr shape %s", got)
	}
	if r := call.Symbols["cols"]; r.Param != "x_ptr" || r.Axis != 1 || r.Div != 2 {
		t.Errorf("cols read as %+v", r)
	}
	_, _, err = Translate(ctx, inv, inv.Kernel("m.py", "half_store"))
	if r, ok := AsRefusal(err); !ok || r.Code != CodeAddress || !strings.Contains(r.Message, "one half") {
		t.Errorf("a store to one half: %v", err)
	}
}
