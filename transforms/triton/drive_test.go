package triton

import (
	"context"
	"strings"
	"testing"
)

// TestPlanLaunchers: the launchers of each kernel are the module-level
// function around its launch and the autograd.Function reaching it, named
// by their module under the import root (a namespace package the tree
// imports absolutely counts as a package: src/lib has no __init__.py); a
// launch at module level has no launcher (PTR010's reason).
func TestPlanLaunchers(t *testing.T) {
	files := map[string][]byte{
		"src/lib/ops/__init__.py": []byte(""),
		"src/lib/ops/norm.py": []byte(`import torch
import triton
import triton.language as tl
from lib.ops.utils import helper


@triton.jit
def _norm_kernel(X, Y, n, BLOCK: tl.constexpr):
    pass


def norm_forward(x):
    y = torch.empty_like(x)
    _norm_kernel[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return y


class NormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return norm_forward(x)


@triton.jit
def _top_kernel(X, n, BLOCK: tl.constexpr):
    pass


x = torch.zeros(4)
_top_kernel[(1,)](x, 4, BLOCK=4)
`),
		"src/lib/ops/utils.py": []byte("def helper():\n    pass\n"),
	}
	inv, err := DiscoverFiles(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	p := PlanLaunchers(inv, inv.Kernels, files)
	var got []string
	for _, l := range p.ByKernel["src/lib/ops/norm.py:_norm_kernel"] {
		got = append(got, l.Label())
	}
	if strings.Join(got, " ") != "lib.ops.norm.NormFunction lib.ops.norm.norm_forward" {
		t.Errorf("launchers of _norm_kernel: %v", got)
	}
	if why := p.NoDriver["src/lib/ops/norm.py:_top_kernel"]; !strings.Contains(why, "module level") {
		t.Errorf("_top_kernel: %q", why)
	}
	if strings.Join(p.ImportRoots, ",") != "src" || strings.Join(p.Packages, ",") != "lib" {
		t.Errorf("roots %v packages %v, want [src] [lib]", p.ImportRoots, p.Packages)
	}
	if root, mod := ModuleOf("pkg/a.py", map[string][]byte{"pkg/__init__.py": nil}); root != "" || mod != "pkg.a" {
		t.Errorf("ModuleOf pkg/a.py = %q %q", root, mod)
	}
}
