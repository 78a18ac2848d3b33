package kernels

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func discoverOne(t *testing.T, files map[string]string) *Inventory {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for p, s := range files {
		writeFile(t, filepath.Join(dir, p), s)
		names = append(names, p)
	}
	inv, _ := Discover(context.Background(), dir, names)
	return inv
}

func param(s *Spec, name string) *Param {
	for i := range s.Params {
		if s.Params[i].Name == name {
			return &s.Params[i]
		}
	}
	return nil
}

func TestInferCases(t *testing.T) {
	const head = "#include <torch/extension.h>\n"
	cases := []struct {
		name, src   string
		status      string
		reason      string            // substring, for needs-spec
		roles       map[string]string // param -> role
		shapes      map[string]string // param -> joined shape
		constraints []string          // must be present
		grid        string
		class       string
	}{
		{
			name: "unguarded floor grid",
			src: head + `__global__ void dbl(const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = 2.0f * x[i];
}
torch::Tensor f(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  dbl<<<n / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>());
  return y;
}`,
			status: SpecInferred, roles: map[string]string{"x": "input", "y": "output"}, shapes: map[string]string{"y": "n"},
			constraints: []string{"n % 256 == 0"}, grid: "n / 256", class: ClassElementwise,
		},
		{
			name: "unguarded ceil grid",
			src: head + `__global__ void dbl(const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = 2.0f * x[i];
}
torch::Tensor f(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  dbl<<<(n + 127) / 128, 128>>>(x.data_ptr<float>(), y.data_ptr<float>());
  return y;
}`,
			status: SpecInferred, constraints: []string{"n % 128 == 0"}, grid: "(n + 127) / 128",
		},
		{
			name: "dispatch, pointer locals, aliases, device writes",
			src: head + `template <typename scalar_t>
__device__ void store(scalar_t* p, int j, scalar_t v) { p[j] = v; }
template <typename scalar_t>
__global__ void rows_k(const scalar_t* x, scalar_t* y, scalar_t* acc, int cols) {
  const scalar_t* xr = x + blockIdx.x * cols;
  scalar_t* yr = y + blockIdx.x * cols;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    store(yr, j, xr[j]);
    acc[j] += xr[j];
  }
}
torch::Tensor f(torch::Tensor x, torch::Tensor acc) {
  TORCH_CHECK(x.dim() == 2, "2-D");
  TORCH_CHECK(acc.size(0) == x.size(1), "acc");
  auto y = at::empty_like(x);
  const int rows = x.size(0), cols = x.size(1);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "rows", [&] {
    const scalar_t* xp = x.data_ptr<scalar_t>();
    rows_k<scalar_t><<<rows, 128>>>(xp, y.data_ptr<scalar_t>(), acc.data_ptr<scalar_t>(), cols);
  });
  return y;
}`,
			status: SpecInferred, roles: map[string]string{"x": "input", "y": "output", "acc": "inout", "cols": "size"},
			shapes: map[string]string{"x": "rows,cols", "y": "rows,cols", "acc": "cols"}, grid: "rows",
		},
		{
			name:   "no launch",
			src:    `__global__ void lonely(float* y) { y[threadIdx.x] = 0.0f; }`,
			status: SpecNeedsSpec, reason: "no launch site",
		},
		{
			name: "pointer arithmetic argument",
			src: head + `__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 0.0f; }
void f(torch::Tensor y, int64_t off) {
  int n = y.numel();
  k<<<1, 256>>>(y.data_ptr<float>() + off, n);
}`,
			status: SpecNeedsSpec, reason: "cannot tell which tensor",
		},
		{
			name: "unknown shape",
			src: head + `__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 0.0f; }
void f(torch::Tensor y) {
  k<<<1, 256>>>(y.data_ptr<float>(), 5);
}`,
			status: SpecNeedsSpec, reason: "shape of y",
		},
		{
			name: "partly known 2-D shape",
			src: head + `__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 0.0f; }
void f(torch::Tensor y) {
  TORCH_CHECK(y.dim() == 2, "2-D");
  int n = y.size(0);
  k<<<1, 256>>>(y.data_ptr<float>(), n);
}`,
			status: SpecNeedsSpec, reason: "size 1 of y is unknown",
		},
		{
			name: "unknown dtype",
			src: head + `struct P { float a; };
__global__ void k(float* y, P p, int n) { int i = threadIdx.x; if (i < n) y[i] = p.a; }
void f(torch::Tensor y) {
  int n = y.numel();
  k<<<1, 256>>>(y.data_ptr<float>(), P{1.0f}, n);
}`,
			status: SpecNeedsSpec, reason: "no dtype",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv := discoverOne(t, map[string]string{"k.cu": c.src})
			if len(inv.Kernels) != 1 {
				t.Fatalf("%d kernels", len(inv.Kernels))
			}
			k := inv.Kernels[0]
			if k.SpecStatus != c.status {
				t.Fatalf("status %s (%s), want %s", k.SpecStatus, k.Reason, c.status)
			}
			if c.reason != "" && !strings.Contains(k.Reason, c.reason) {
				t.Errorf("reason %q lacks %q", k.Reason, c.reason)
			}
			if k.Spec == nil {
				return
			}
			for p, role := range c.roles {
				if got := param(k.Spec, p); got == nil || got.Role != role {
					t.Errorf("%s role %+v, want %s", p, got, role)
				}
			}
			for p, shape := range c.shapes {
				if got := param(k.Spec, p); got == nil || strings.Join(got.Shape, ",") != shape {
					t.Errorf("%s shape %+v, want %s", p, got, shape)
				}
			}
			for _, want := range c.constraints {
				found := false
				for _, got := range k.Spec.Domain.Constraints {
					found = found || got == want
				}
				if !found {
					t.Errorf("constraints %v lack %q", k.Spec.Domain.Constraints, want)
				}
			}
			if c.grid != "" && k.Spec.Launch.Grid[0] != c.grid {
				t.Errorf("grid %q, want %q", k.Spec.Launch.Grid[0], c.grid)
			}
			if c.class != "" && k.Class != c.class {
				t.Errorf("class %s, want %s", k.Class, c.class)
			}
			if len(ValidateSpec(k.Spec, k)) != 0 {
				t.Errorf("inferred spec does not validate: %v", ValidateSpec(k.Spec, k))
			}
		})
	}
}

func TestInferLaunchInOtherFile(t *testing.T) {
	inv := discoverOne(t, map[string]string{
		"csrc/k.cuh": `#pragma once
#define THREADS 64
__global__ void fill(float* y, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = v;
}
`,
		"csrc/ops.cu": `#include <torch/extension.h>
#include "k.cuh"
void fill_(torch::Tensor y, double v) {
  int n = y.numel();
  fill<<<(n + THREADS - 1) / THREADS, THREADS>>>(y.data_ptr<float>(), 0.5f, n);
}
`})
	if len(inv.Kernels) != 1 {
		t.Fatalf("%d kernels", len(inv.Kernels))
	}
	k := inv.Kernels[0]
	if k.Path != "csrc/k.cuh" || k.SpecStatus != SpecInferred {
		t.Fatalf("%s %s %s", k.Path, k.SpecStatus, k.Reason)
	}
	if k.Spec.Launch.Grid[0] != "(n + 63) / 64" {
		t.Errorf("grid %v", k.Spec.Launch.Grid)
	}
	if v := param(k.Spec, "v"); v == nil || v.Value == nil || *v.Value != 0.5 {
		t.Errorf("literal scalar value not recorded: %+v", v)
	}
}

func TestInferCuPyModule(t *testing.T) {
	inv := discoverOne(t, map[string]string{"ops.py": `import cupy as cp
mod = cp.RawModule(code=r"""
extern "C" __global__ void addmat(const float* a, const float* b, float* c, int rows, int cols) {
  int r = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < cols) c[r * cols + j] = a[r * cols + j] + b[r * cols + j];
}
""")
addmat = mod.get_function("addmat")

def add(a, b):
    rows, cols = a.shape
    assert cols <= 4096
    c = cp.empty((rows, cols), dtype=cp.float32)
    addmat((cp.cdiv(cols, 64), rows), (64,), (a, cp.ascontiguousarray(a), c, cp.int32(rows), cp.int32(cols)))
    return c
`})
	if len(inv.Kernels) != 1 {
		t.Fatalf("%d kernels", len(inv.Kernels))
	}
	k := inv.Kernels[0]
	if k.SpecStatus != SpecNeedsSpec || !strings.Contains(k.Reason, "argument 2 (b)") {
		t.Fatalf("a call expression for an array argument must not be guessed: %s %s", k.SpecStatus, k.Reason)
	}
	inv = discoverOne(t, map[string]string{"ops.py": strings.Replace(`import cupy as cp
mod = cp.RawModule(code=r"""
extern "C" __global__ void addmat(const float* a, const float* b, float* c, int rows, int cols) {
  int r = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < cols) c[r * cols + j] = a[r * cols + j] + b[r * cols + j];
}
""")
addmat = mod.get_function("addmat")

def add(a, b):
    rows, cols = a.shape
    assert cols <= 4096
    b2 = cp.ascontiguousarray(a)
    c = cp.empty((rows, cols), dtype=cp.float32)
    addmat((cp.cdiv(cols, 64), rows), (64,), (a, b2, c, cp.int32(rows), cp.int32(cols)), shared_mem=0)
    return c
`, "\r", "", -1)})
	k = inv.Kernels[0]
	if k.SpecStatus != SpecInferred {
		t.Fatalf("%s: %s", k.SpecStatus, k.Reason)
	}
	if got := strings.Join(param(k.Spec, "c").Shape, ","); got != "rows,cols" || param(k.Spec, "c").Role != "output" {
		t.Errorf("c: %+v", param(k.Spec, "c"))
	}
	if k.Spec.Launch.Grid[0] != "(cols + 63) / 64" || k.Spec.Launch.Grid[1] != "rows" {
		t.Errorf("grid %v", k.Spec.Launch.Grid)
	}
	found := false
	for _, c := range k.Spec.Domain.Constraints {
		found = found || c == "cols <= 4096"
	}
	if !found {
		t.Errorf("assert not turned into a constraint: %v", k.Spec.Domain.Constraints)
	}
}

func TestInferShapeFromIndexing(t *testing.T) {
	src := `#include <torch/extension.h>
__global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
void f(torch::Tensor x, torch::Tensor y) {
  int n = x.numel();
  k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
}`
	inv := discoverOne(t, map[string]string{"k.cu": src})
	k := inv.Kernels[0]
	if k.SpecStatus != SpecInferred || strings.Join(param(k.Spec, "y").Shape, ",") != "n" {
		t.Fatalf("%s %s %+v", k.SpecStatus, k.Reason, k.Spec)
	}
	// an alias of y defeats the indexing rule: needs-spec, not a guess
	src2 := strings.Replace(src, "if (i < n) y[i] = x[i];", "float* z = y; if (i < n) z[i] = x[i];", 1)
	inv = discoverOne(t, map[string]string{"k.cu": src2})
	if k := inv.Kernels[0]; k.SpecStatus != SpecNeedsSpec {
		t.Errorf("aliased pointer guessed: %+v", k.Spec)
	}
}

func TestInferRawPointerLauncherAndDirectSizes(t *testing.T) {
	inv := discoverOne(t, map[string]string{"k.cu": `
__global__ void axpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
void launch_axpy(const float* x, float* y, float a, int n, cudaStream_t s) {
  axpy<<<(n + 255) / 256, 256, 0, s>>>(x, y, a, n);
}
`, "m.cu": `#include <torch/extension.h>
__global__ void rowsum(const float* x, float* out, int cols) {
  float acc = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) acc += x[blockIdx.x * cols + j];
  atomicAdd(&out[blockIdx.x], acc);
}
torch::Tensor f(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 2, "2-D");
  auto out = torch::zeros({x.size(0)}, x.options());
  rowsum<<<x.size(0), 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
  return out;
}
`})
	for _, k := range inv.Kernels {
		if k.SpecStatus != SpecInferred {
			t.Errorf("%s: %s", k.Name, k.Reason)
			continue
		}
		switch k.Name {
		case "axpy":
			if got := strings.Join(param(k.Spec, "x").Shape, ","); got != "n" || param(k.Spec, "y").Role != "inout" {
				t.Errorf("axpy: %+v", k.Spec.Params)
			}
		case "rowsum":
			if got := strings.Join(param(k.Spec, "x").Shape, ","); got != "x_size0,cols" {
				t.Errorf("rowsum x shape %s", got)
			}
			if param(k.Spec, "out").Role != "inout" || k.Spec.Deterministic || k.Class != ClassRowReduction {
				t.Errorf("rowsum: role %s deterministic %v class %s", param(k.Spec, "out").Role, k.Spec.Deterministic, k.Class)
			}
		}
	}
}
