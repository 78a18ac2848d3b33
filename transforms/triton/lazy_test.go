package triton

import (
	"context"
	"strings"
	"testing"
)

// TestLazyTriton: the top-level triton imports of a wired file go under try,
// each name they bind given its stand-in where the import fails; a second
// pass changes nothing, other imports stay, and what cannot be bound by
// name (a wildcard, a statement mixing modules) leaves the file as it is.
func TestLazyTriton(t *testing.T) {
	ctx := context.Background()
	src := `"""Doc."""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice as ld, cuda

from . import _pallas_triton_ops


@triton.jit
def k(x):
    pass
`
	want := `"""Doc."""
import torch

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice as ld, cuda
except ImportError:  # no Triton here (a TPU host): tensors on "tpu" take the Pallas kernels
    from ._pallas_triton_ops import missing_triton as _missing_triton

    triton = _missing_triton("triton")
    tl = _missing_triton("triton.language")
    ld = _missing_triton("triton.language.extra.libdevice")
    cuda = _missing_triton("triton.language.extra.cuda")

from . import _pallas_triton_ops
`
	got := lazyTriton(ctx, src, true)
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "@triton.jit\ndef k(x):\n    pass\n") {
		t.Errorf("lazyTriton:\n%s", got)
	}
	if again := lazyTriton(ctx, got, true); again != got {
		t.Errorf("a second pass changed the file:\n%s", again)
	}
	if got := lazyTriton(ctx, "import triton\n", false); !strings.Contains(got, "    from _pallas_triton_ops import missing_triton as _missing_triton\n") {
		t.Errorf("outside a package the stand-ins come from the sibling module:\n%s", got)
	}
	for _, keep := range []string{"from triton.language import *\nimport triton\n", "import os, triton\n", "import torch\n"} {
		if got := lazyTriton(ctx, keep, true); got != keep {
			t.Errorf("%q changed:\n%s", keep, got)
		}
	}
	two := "import triton\nimport torch\nimport triton.language as tl\n"
	if got := lazyTriton(ctx, two, true); strings.Count(got, "try:\n") != 2 || !strings.Contains(got, "\nimport torch\n\ntry:\n    import triton.language as tl\n") {
		t.Errorf("two runs of triton imports:\n%s", got)
	}
}
