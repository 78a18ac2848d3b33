package pallas_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
)

// draftWithSpec drafts the one kernel of src under the user spec specYAML.
func draftWithSpec(t *testing.T, name, src, specYAML string) error {
	t.Helper()
	dir := t.TempDir()
	id := kernels.KernelID("kernel.cu", name)
	spec := filepath.Join(dir, filepath.FromSlash(kernels.UserSpecPath(id)))
	if err := os.MkdirAll(filepath.Dir(spec), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel.cu"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, []byte(specYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	inv, _ := kernels.Discover(context.Background(), dir, []string{"kernel.cu"})
	if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
		t.Fatalf("%s: kernels %+v", name, inv.Kernels)
	}
	_, err := pallas.Draft(context.Background(), inv.Kernels[0], pallas.Options{})
	return err
}

// TestSequentialScanRefused: a one-block kernel whose runtime-count loop
// synchronises every iteration and carries its state in shared memory
// (mmcv nms's gather_keep_from_mask) is a sequential scan: refused as a
// class without a rule template, not as an unknown name or a bare loop.
func TestSequentialScanRefused(t *testing.T) {
	src := `int const threadsPerBlock = sizeof(unsigned long long int) * 8;

__global__ void keep_kernel(bool* keep, const unsigned long long* mask, const int n) {
  const int col_blocks = (n + threadsPerBlock - 1) / threadsPerBlock;
  const int tid = threadIdx.x;
  extern __shared__ unsigned long long removed[];
  for (int i = tid; i < col_blocks; i += blockDim.x) removed[i] = 0;
  __syncthreads();
  for (int nblock = 0; nblock < col_blocks; ++nblock) {
    auto removed_val = removed[nblock];
    __syncthreads();
    for (int inblock = 0; inblock < threadsPerBlock; ++inblock) {
      const int i = nblock * threadsPerBlock + inblock;
      if (i >= n) break;
      if (!(removed_val & (1ULL << inblock))) {
        if (tid == 0) keep[i] = true;
        for (int j = tid; j < col_blocks; j += blockDim.x) if (j >= nblock) removed[j] |= mask[i * col_blocks + j];
        __syncthreads();
        removed_val = removed[nblock];
      }
    }
  }
}
`
	spec := `name: keep_kernel
class: row-reduction
symbols: [n, cb]
params:
  - {name: keep, kind: pointer, ctype: "bool*", dtype: bool, role: output, shape: [n]}
  - {name: mask, kind: pointer, ctype: "const unsigned long long*", dtype: uint64, role: input, shape: [n, cb]}
  - {name: n, kind: scalar, ctype: "const int", dtype: int32, role: size, expr: n}
launch:
  grid: ["1", "1", "1"]
  block: ["4", "1", "1"]
  shared_bytes: "cb * 8"
domain:
  constraints: ["cb == (n + 63) / 64"]
deterministic: true
`
	err := draftWithSpec(t, "keep_kernel", src, spec)
	r, ok := pallas.AsRefusal(err)
	if !ok || r.Code != pallas.CodeClass || !strings.Contains(r.Message, "sequential scan") {
		t.Fatalf("want a PPL001 sequential-scan refusal, got %v", err)
	}
}

// TestRowsPerBlockRefusals: several rows per block are drafted only when
// each y group's row is told apart exactly: shared memory (one array for
// all the block's rows) is refused, and so is a store after a return the
// row guard does not explain; a shuffle loop in the kernel body reduces a
// row only when the row is one warp.
func TestRowsPerBlockRefusals(t *testing.T) {
	spec := func(name, block string) string {
		return `name: ` + name + `
class: row-reduction
symbols: [rows, cols]
params:
  - {name: x, kind: pointer, ctype: "const float*", dtype: float32, role: input, shape: [rows, cols]}
  - {name: out, kind: pointer, ctype: "float*", dtype: float32, role: output, shape: [rows]}
  - {name: rows, kind: scalar, ctype: "int", dtype: int32, role: size, expr: rows}
  - {name: cols, kind: scalar, ctype: "int", dtype: int32, role: size, expr: cols}
launch:
  grid: ["(rows + 3) / 4", "1", "1"]
  block: [` + block + `, "1"]
  shared_bytes: "0"
deterministic: true
`
	}
	for _, c := range []struct {
		name, block, body, want string
	}{
		{"shared_rows", `"32", "4"`, `
  __shared__ float part[4][32];
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += x[(size_t)row * cols + j];
  part[threadIdx.y][threadIdx.x] = s;
  if (threadIdx.x == 0) out[row] = s;`, "shared memory"},
		{"early_return", `"32", "1"`, `
  if (cols < 4) return;
  if (threadIdx.x == 0) out[blockIdx.x] = x[(size_t)blockIdx.x * cols];`, "after a conditional return"},
		{"warp_of_many", `"128", "1"`, `
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += x[(size_t)blockIdx.x * cols + j];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
  if (threadIdx.x == 0) out[blockIdx.x] = s;`, "shuffle loop"},
	} {
		src := "__global__ void " + c.name + "(const float* x, float* out, int rows, int cols) {" + c.body + "\n}\n"
		err := draftWithSpec(t, c.name, src, spec(c.name, c.block))
		r, ok := pallas.AsRefusal(err)
		if !ok || !strings.Contains(r.Message, c.want) {
			t.Errorf("%s: want a refusal saying %q, got %v", c.name, c.want, err)
		}
	}
}

// TestFloat64RefusedUntilFloat32Instance: the float32_instance pattern as its
// tests launch it (scalar_t = double) is refused with PPL005; its float32
// instantiation (kernels.Float32Instance, as the capture stage makes it)
// drafts, over float32 refs.
func TestFloat64RefusedUntilFloat32Instance(t *testing.T) {
	ctx := context.Background()
	inv, _ := kernels.Discover(ctx, "testdata/float32_instance", []string{"kernel.cu"})
	if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
		t.Fatalf("kernels %+v", inv.Kernels)
	}
	k := inv.Kernels[0]
	if !strings.Contains(k.Unit.Source, "reassemble_kernel<double>") {
		t.Errorf("the user spec's scalar_t = double does not instantiate the unit:\n%s", k.Unit.Source)
	}
	_, err := pallas.Draft(ctx, k, pallas.Options{})
	if err == nil || !strings.HasPrefix(err.Error(), pallas.CodeDType) {
		t.Fatalf("float64 draft: %v, want %s", err, pallas.CodeDType)
	}
	if !kernels.Float32Instance(k) || !strings.Contains(k.Unit.Source, "reassemble_kernel<float>") {
		t.Fatalf("no float32 instance:\n%s", k.Unit.Source)
	}
	res, err := pallas.Draft(ctx, k, pallas.Options{})
	if err != nil {
		t.Fatalf("float32 instance: %v", err)
	}
	if strings.Contains(res.Module, "float64") {
		t.Error("the float32 draft mentions float64")
	}
}

// TestHelperRefusals: a template helper whose parameter is deduced as two
// types, one that returns a value only under a condition, and one that
// returns from inside a loop it runs are refused, each with its construct.
func TestHelperRefusals(t *testing.T) {
	spec := `name: h_kernel
class: elementwise
symbols: [n]
params:
  - {name: x, kind: pointer, ctype: "const float*", dtype: float32, role: input, shape: [n]}
  - {name: y, kind: pointer, ctype: "float*", dtype: float32, role: output, shape: [n]}
  - {name: n, kind: scalar, ctype: "const int", dtype: int32, role: size, expr: n}
  - {name: k, kind: scalar, ctype: "const int", dtype: int32, role: scalar, range: [1, 4]}
launch:
  grid: ["(n + 127) / 128", "1", "1"]
  block: ["128", "1", "1"]
  shared_bytes: "0"
deterministic: true
`
	kernel := `
__global__ void h_kernel(const float* x, float* y, const int n, const int k) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = CALL;
}
`
	for _, c := range []struct{ name, helper, call, want string }{
		{"deduced twice", "template <typename T> __device__ T add(T a, T b) { return a + b; }", "add(x[i], k)",
			"add: T deduced as both float and int"},
		{"value under a condition only", "__device__ float pos(float a) { if (a > 0.0f) return a; }", "pos(x[i])",
			"pos returns a value under a condition only"},
		{"return inside its loop", "__device__ float first(float a, int k) { for (int j = 0; j < k; j++) { if (a > j) return a; } return 0.0f; }",
			"first(x[i], k)", "a helper returns from inside a loop it runs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := draftWithSpec(t, "h_kernel", c.helper+strings.Replace(kernel, "CALL", c.call, 1), spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}
