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

// capturedKernel is a kernel with one captured case: the launch, and each
// output's elements before and after (changed marks the ones the launch
// wrote).
func capturedKernel(class, src string, launch [7]int64, outs map[string][]bool) *Kernel {
	c := CapturedCase{Launch: launch, Args: map[string]any{}, Expected: map[string]CapturedBuffer{}}
	for name, changed := range outs {
		before, after := make([]byte, 4*len(changed)), make([]byte, 4*len(changed))
		for i, ch := range changed {
			if ch {
				after[4*i] = 1
			}
		}
		c.Args[name] = &CapturedBuffer{DType: "float32", Shape: []int64{int64(len(changed))}, Data: before}
		c.Expected[name] = CapturedBuffer{DType: "float32", Shape: []int64{int64(len(changed))}, Data: after}
	}
	return &Kernel{Name: "k", Class: class, Unit: &Unit{Source: src}, Spec: &Spec{Class: class, Note: "captured"},
		Captured: &Capture{Launches: 1, Used: 1, Cases: []CapturedCase{c}}}
}

func bools(n int, f func(int) bool) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// TestClassFromBehaviour: what the launches did decides between the rule
// drafter's classes and a scatter.
func TestClassFromBehaviour(t *testing.T) {
	all := func(int) bool { return true }
	cases := []struct {
		name, structural, src string
		launch                [7]int64
		outs                  map[string][]bool
		want                  string // "" keeps the structural class
	}{
		// atomicAdd(grad + idx[i] * c, g): tagged a row reduction by its atomics
		{"scatter-add", ClassRowReduction, "__global__ void k(){ atomicAdd(grad + j, g); }", [7]int64{4, 1, 1, 128, 1, 1, 0},
			map[string][]bool{"grad": bools(100, func(i int) bool { return i%3 == 0 })}, ClassScatter},
		// a kernel-loop macro the structure could not see through
		{"loop-macro", ClassOther, "__global__ void k(){ KERNEL_LOOP(i, n) { y[i] = x[i]; } }", [7]int64{2, 1, 1, 256, 1, 1, 0},
			map[string][]bool{"y": bools(500, all)}, ClassElementwise},
		// a row loop without barriers: every thread owns its outputs
		{"no-cooperation", ClassRowReduction, "__global__ void k(){ for (j = threadIdx.x; j < n; j += blockDim.x) y[j] = x[j]; }",
			[7]int64{8, 1, 1, 128, 1, 1, 0}, map[string][]bool{"y": bools(8*300, all)}, ClassElementwise},
		// a block-per-row softmax stays a row reduction
		{"row", ClassRowReduction, "__global__ void k(){ __syncthreads(); }", [7]int64{8, 1, 1, 128, 1, 1, 0},
			map[string][]bool{"y": bools(8*300, all)}, ""},
		// a tiled kernel of unknown structure is not made a row reduction
		{"tiled-unknown", ClassOther, "__global__ void k(){ __shared__ float t[64]; __syncthreads(); }", [7]int64{4, 4, 1, 8, 8, 1, 0},
			map[string][]bool{"c": bools(1024, all)}, ""},
		// a matmul tile keeps its structural class
		{"matmul", ClassMatmulTile, "__global__ void k(){ acc += a[i*k+j] * b[j*n+c]; }", [7]int64{4, 1, 1, 64, 1, 1, 0},
			map[string][]bool{"c": bools(256, all)}, ""},
	}
	for _, c := range cases {
		k := capturedKernel(c.structural, c.src, c.launch, c.outs)
		note := ClassifyCaptured(k)
		want := c.want
		if want == "" {
			want = c.structural
			if note != "" {
				t.Errorf("%s: reclassified: %s", c.name, note)
			}
		} else if !strings.Contains(note, "from the captured launches") || !strings.Contains(k.Spec.Note, note) {
			t.Errorf("%s: note %q, spec note %q", c.name, note, k.Spec.Note)
		}
		if k.Class != want || k.Spec.Class != want {
			t.Errorf("%s: class %s (spec %s), want %s (%s)", c.name, k.Class, k.Spec.Class, want, note)
		}
	}
	// without captured buffers nothing is concluded
	k := &Kernel{Class: ClassOther, Unit: &Unit{Source: "x"}, Captured: &Capture{}}
	if _, _, ok := ClassFromBehaviour(k); ok {
		t.Errorf("a capture without cases gave a class")
	}
}
