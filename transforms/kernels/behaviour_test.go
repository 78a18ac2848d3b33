package kernels

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestKernelLoopMacroFromHelperHeader is mmcv's layout: the kernel header
// includes its helper inside #ifdef OTHER_BACKEND / #else, the helper lives
// in a folder above (found as the build's -I finds it) and includes the
// header that defines CUDA_1D_KERNEL_LOOP. The unit carries the macro and
// the kernel classes as the loop it expands to.
func TestKernelLoopMacroFromHelperHeader(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "csrc/common/cuda/common_helper.hpp"), `#ifndef COMMON_HELPER
#define COMMON_HELPER
#define CUDA_1D_KERNEL_LOOP(i, n)                              \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += blockDim.x * gridDim.x)
#endif
`)
	writeFile(t, filepath.Join(dir, "csrc/common/cuda_helper.hpp"), `#include <ATen/ATen.h>
#include "common_helper.hpp"
`)
	writeFile(t, filepath.Join(dir, "csrc/common/cuda/scale_kernel.cuh"), `#ifdef USE_OTHER_BACKEND
#include "other_helper.hpp"
#else
#include "cuda_helper.hpp"
#endif
__global__ void scale_kernel(const int n, const float* x, float* y) {
  CUDA_1D_KERNEL_LOOP(index, n) { y[index] = 2.0f * x[index]; }
}
`)
	inv, _ := Discover(context.Background(), dir, nil)
	if len(inv.Kernels) != 1 {
		t.Fatalf("kernels: %d", len(inv.Kernels))
	}
	k := inv.Kernels[0]
	if k.Class != ClassElementwise {
		t.Errorf("class %s, want %s", k.Class, ClassElementwise)
	}
	if k.Unit == nil || !strings.Contains(k.Unit.Source, "#define CUDA_1D_KERNEL_LOOP") {
		t.Errorf("the unit lacks the macro:\n%v", k.Unit)
	}
}

// TestElseIncludeOnlyAsFallback: when the first branch's header is in the
// tree, the #else branch's header is not spliced in.
func TestElseIncludeOnlyAsFallback(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src/a.h"), "#define LOOP_A(i, n) for (int i = threadIdx.x; i < (n); i += blockDim.x)\n")
	writeFile(t, filepath.Join(dir, "src/b.h"), "#define LOOP_B 1\n")
	writeFile(t, filepath.Join(dir, "src/k.cu"), `#ifdef USE_A
#include "a.h"
#else
#include "b.h"
#endif
__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = LOOP_B; }
`)
	inv, _ := Discover(context.Background(), dir, nil)
	if len(inv.Kernels) != 1 || inv.Kernels[0].Unit == nil {
		t.Fatalf("kernels: %+v", inv.Kernels)
	}
	if src := inv.Kernels[0].Unit.Source; strings.Contains(src, "LOOP_B 1") {
		t.Errorf("the #else header was spliced although the first branch resolved:\n%s", src)
	}
}
