package kernels

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestIsolateFixtures checks the isolated TU of every fixture kernel against
// a golden file, and that it parses cleanly (after masking) with no host glue.
func TestIsolateFixtures(t *testing.T) {
	files := fixtureFiles(t)
	inv, _ := Discover(context.Background(), repoRoot, files)
	seen := 0
	for _, k := range inv.Kernels {
		name := filepath.Base(filepath.Dir(k.Path))
		t.Run(name, func(t *testing.T) {
			u := k.Unit
			if u == nil {
				t.Fatal("no unit")
			}
			seen++
			masked, _ := Mask([]byte(u.Source))
			if n := parseErrors(t, masked); n != 0 {
				t.Errorf("TU parses with %d errors", n)
			}
			for _, bad := range []string{"torch", "PYBIND11", "TORCH_LIBRARY", "<<<", "data_ptr", "C10_"} {
				if strings.Contains(u.Source, bad) {
					t.Errorf("TU contains host code %q", bad)
				}
			}
			if !strings.Contains(u.Source, "__global__") {
				t.Errorf("TU lost the __global__ qualifier")
			}
			if len(u.Unsupported) > 0 {
				t.Errorf("unsupported: %v", u.Unsupported)
			}
			golden(t, "isolate/"+name+".cu", []byte(u.Source+"// entry: "+u.Entry+"\n"))
		})
	}
	if seen != len(files) {
		t.Errorf("%d units for %d fixtures", seen, len(files))
	}
}

func TestIsolateClosure(t *testing.T) {
	src := `#include <torch/extension.h>
#include <cmath>
#include "missing.h"
#define TILE 8
#define UNUSED_MACRO 3
typedef float real;
using idx_t = int;
struct Pair { float a, b; };
enum Mode { kAdd = 1, kMul = 2 };
constexpr int kUnused = 7;
static const int kScale = 2;
__constant__ float table[TILE];
__device__ float helper2(float x) { return x * kScale; }
__device__ float helper(real x) { return helper2(x) + table[0]; }
__device__ float unused_helper(float x) { return x; }
namespace ops {
template <typename T, int N>
__global__ void __launch_bounds__(TILE) k(const T* in, T* out, idx_t n, Pair p) {
  idx_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = helper(in[i]) * p.a + (Mode)kAdd + N;
}
}  // namespace ops
int host_only(int x) { return x; }
torch::Tensor run(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  ops::k<float, 4><<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n, Pair{1, 2});
  return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
`
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "k.cu"), src)
	inv, _ := Discover(context.Background(), dir, []string{"k.cu"})
	if len(inv.Kernels) != 1 {
		t.Fatalf("%d kernels", len(inv.Kernels))
	}
	u := inv.Kernels[0].Unit
	for _, want := range []string{"#include <cmath>", "#define TILE 8", "typedef float real;", "using idx_t = int;", "struct Pair { float a, b; };",
		"enum Mode", "static const int kScale = 2;", "__constant__ float table[TILE];", "helper2", "__device__ float helper(real x)",
		"namespace ops {", "template __global__ void k<float, 4>(const float* in, float* out, idx_t n, Pair p);", "__launch_bounds__(TILE)"} {
		if !strings.Contains(u.Source, want) {
			t.Errorf("TU lacks %q", want)
		}
	}
	for _, bad := range []string{"UNUSED_MACRO", "kUnused", "unused_helper", "host_only", "torch", "PYBIND11", "missing.h"} {
		if strings.Contains(u.Source, bad) {
			t.Errorf("TU has %q", bad)
		}
	}
	if u.Entry != "ops::k<float, 4>" {
		t.Errorf("entry %q", u.Entry)
	}
	if n := parseErrors(t, mustMask(u.Source)); n != 0 {
		t.Errorf("TU parses with %d errors:\n%s", n, u.Source)
	}
	if strings.Index(u.Source, "helper2") > strings.Index(u.Source, "helper(real") {
		t.Errorf("original order not kept")
	}
}

func mustMask(s string) []byte {
	m, _ := Mask([]byte(s))
	return m
}

func TestIsolateLocalHeaderAndUnsupported(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src/common.cuh"), `#pragma once
#include <cooperative_groups.h>
#define WARP 32
__device__ __forceinline__ float sq(float v) { return v * v; }
`)
	writeFile(t, filepath.Join(dir, "src/k.cu"), `#include "common.cuh"
namespace cg = cooperative_groups;
int host_fn(int x) { return x + 1; }
__global__ void k(float* y, int n) {
  auto g = cg::this_thread_block();
  int i = threadIdx.x;
  if (i < n) y[i] = sq(y[i]) + WARP + host_fn(i);
}
`)
	inv, _ := Discover(context.Background(), dir, []string{"src/common.cuh", "src/k.cu"})
	if len(inv.Kernels) != 1 {
		t.Fatalf("%d kernels", len(inv.Kernels))
	}
	u := inv.Kernels[0].Unit
	if !strings.Contains(u.Source, "#define WARP 32") || !strings.Contains(u.Source, "float sq(float v)") {
		t.Errorf("header closure not spliced in:\n%s", u.Source)
	}
	joined := strings.Join(u.Unsupported, ";")
	if !strings.Contains(joined, "calls host function host_fn") || !strings.Contains(joined, "cooperative_groups") {
		t.Errorf("unsupported = %v", u.Unsupported)
	}
}

// TestIsolateConstAfterType: `int const N = ...;` (the qualifier after the
// type, as mmcv's nms writes threadsPerBlock) is a constant the kernel's
// unit needs, not host state.
func TestIsolateConstAfterType(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "k.cu"), "int const threadsPerBlock = sizeof(unsigned long long int) * 8;\nint counter = 0;\n"+
		"__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = threadsPerBlock; }\n")
	inv, _ := Discover(context.Background(), dir, []string{"k.cu"})
	if len(inv.Kernels) != 1 {
		t.Fatalf("kernels: %d", len(inv.Kernels))
	}
	src := inv.Kernels[0].Unit.Source
	if !strings.Contains(src, "int const threadsPerBlock") || strings.Contains(src, "int counter") {
		t.Errorf("unit:\n%s", src)
	}
}
