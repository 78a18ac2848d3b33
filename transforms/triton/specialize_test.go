package triton

import (
	"context"
	"strings"
	"testing"
)

// specializeSrc has constexprs the launch computes: a flag (HAS_B), a mode
// compared with a module constant (MODE) and one only a folded-away branch
// reads (IGNORE).
const specializeSrc = `import torch
import triton
import triton.language as tl

_MODE_PLAIN: tl.constexpr = tl.constexpr(0)
_MODE_SCALED: tl.constexpr = tl.constexpr(1)


@triton.jit
def k(X, B, Y, L, stride, n_cols, IGNORE: tl.constexpr, HAS_L: tl.constexpr, HAS_B: tl.constexpr, MODE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
    if HAS_L:
        lab = tl.load(L + row)
        if lab == IGNORE:
            x = x * 0.0
    if HAS_B:
        x = x + tl.load(B + cols, mask=mask, other=0.0)
    if MODE == _MODE_SCALED:
        x = x * 2.0
    tl.store(Y + row * stride + cols, x, mask=mask)


def wrapper(x, b, lab, mode, ignore):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    k[(n_rows,)](x, b, y, lab, x.stride(0), n_cols, ignore, lab is not None, b is not None, mode, BLOCK=triton.next_power_of_2(n_cols))
    return y
`

// TestSpecialize: a kernel whose switches the launch computes is translated
// for the first combination that translates, the specialization is in the
// analysis and the spec's note, and a constexpr the candidate does not read
// is free (not checked at the launch).
func TestSpecialize(t *testing.T) {
	ctx := context.Background()
	inv, err := DiscoverFiles(ctx, map[string][]byte{"m.py": []byte(specializeSrc)})
	if err != nil {
		t.Fatal(err)
	}
	k := inv.Kernel("m.py", "k")
	if _, err := Analyse(ctx, inv, k); err == nil {
		t.Fatal("the plain analysis has values for every constexpr; the test needs computed ones")
	}
	a, src, err := Translate(ctx, inv, k)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"HAS_L": "False", "HAS_B": "True", "MODE": "1"}
	for n, v := range want {
		if a.Specialized[n] != v {
			t.Errorf("specialized %s = %q, want %q (all: %v)", n, a.Specialized[n], v, a.Specialized)
		}
	}
	if len(a.Free) != 1 || a.Free[0] != "IGNORE" {
		t.Errorf("free constexprs %v, want [IGNORE]", a.Free)
	}
	if _, ok := a.Specialized["IGNORE"]; ok {
		t.Errorf("a free constexpr is listed as specialized: %v", a.Specialized)
	}
	if !strings.Contains(string(src), "2.0") {
		t.Errorf("MODE = 1 (the value it is compared with) lost the scaled branch:\n%s", src)
	}
	s, _, err := Spec(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Note, "specialized on HAS_B=True, HAS_L=False, MODE=1") {
		t.Errorf("spec note: %s", s.Note)
	}
}
