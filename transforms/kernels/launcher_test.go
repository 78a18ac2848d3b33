package kernels

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A launcher that names each size by the tensor dim it is: rows and cols
// are independent in the host code, whatever values a launch passes.
const rowScaleRepo = `#include <torch/extension.h>
__global__ void row_scale_kernel(const float* x, const float* s, float* out, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) out[i] = x[i] * s[i / cols];
}
torch::Tensor row_scale(torch::Tensor x, torch::Tensor s) {
  TORCH_CHECK(s.size(0) == x.size(0), "one scale per row");
  const int rows = x.size(0), cols = x.size(1);
  auto out = torch::empty_like(x);
  row_scale_kernel<<<(rows * cols + 255) / 256, 256>>>(x.data_ptr<float>(), s.data_ptr<float>(),
                                                      out.data_ptr<float>(), rows, cols);
  return out;
}
`

func rowScaleKernel(t *testing.T) *Kernel {
	t.Helper()
	root := writeRepo(t, map[string]string{"csrc/row_scale.cu": rowScaleRepo})
	inv, _ := Discover(context.Background(), root, nil)
	for _, k := range inv.Kernels {
		if k.Name == "row_scale_kernel" {
			return k
		}
	}
	t.Fatalf("row_scale_kernel not discovered")
	return nil
}

// rowScaleLaunch writes one launch of row_scale_kernel at rows × cols, with
// the tensors' shape hints, and reads it back.
func rowScaleLaunch(t *testing.T, rows, cols int) []CapturedLaunch {
	t.Helper()
	dir := t.TempDir()
	ptr := func(idx int, name, role string, shape []int) map[string]any {
		n := 1
		for _, d := range shape {
			n *= d
		}
		file := fmt.Sprintf("0_%s.bin", name)
		if err := os.WriteFile(filepath.Join(dir, file), make([]byte, 4*n), 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"index": idx, "name": name, "kind": "pointer", "ctype": "float*", "dtype": "float32",
			"address": fmt.Sprintf("0x%x", 0x1000*(idx+1)), "alloc": map[string]any{"id": idx, "bytes": 4 * n, "origin": "torch"},
			"extent_bytes": 4 * n, "shape_hint": shape, "read": role == "input", "written": role == "output",
			"read_known": true, "role": role, "before": file, "after": file}
	}
	scalar := func(idx int, name string, v int) map[string]any {
		return map[string]any{"index": idx, "name": name, "kind": "scalar", "ctype": "int", "dtype": "int32", "value": v}
	}
	l := map[string]any{"schema": CaptureSchema, "seq": 0, "kernel": "row_scale_kernel", "instance": "row_scale_kernel",
		"grid": []int{(rows*cols + 255) / 256, 1, 1}, "block": []int{256, 1, 1}, "shared_bytes": 0, "roles_from": "access",
		"args": []any{ptr(0, "x", "input", []int{rows, cols}), ptr(1, "s", "input", []int{rows}),
			ptr(2, "out", "output", []int{rows, cols}), scalar(3, "rows", rows), scalar(4, "cols", cols)}}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func specShapes(spec *Spec) map[string][]string {
	out := map[string][]string{}
	for _, p := range spec.Params {
		if p.Kind == "pointer" {
			out[p.Name] = p.Shape
		}
	}
	return out
}

// The test launches a 4 × 4 input only, so its values cannot tell rows
// from cols; the host code can (rows = x.size(0), cols = x.size(1), the
// scales checked against x.size(0), out shaped like x), and the grid is
// the host's. The spec names every dim by it and sweeps the sizes apart.
func TestSpecFromLaunchesSizesFromTheLauncher(t *testing.T) {
	k := rowScaleKernel(t)
	spec, cp, err := SpecFromLaunches(k, rowScaleLaunch(t, 4, 4))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rows", "cols"}; !reflect.DeepEqual(spec.Symbols, want) {
		t.Fatalf("symbols = %v, want %v", spec.Symbols, want)
	}
	want := map[string][]string{"x": {"rows", "cols"}, "s": {"rows"}, "out": {"rows", "cols"}}
	if got := specShapes(spec); !reflect.DeepEqual(got, want) {
		t.Errorf("shapes = %v, want %v", got, want)
	}
	if g := spec.Launch.Grid[0]; !strings.Contains(g, "rows") || !strings.Contains(g, "cols") {
		t.Errorf("grid = %q, want the host's (rows * cols + 255) / 256", g)
	}
	if len(spec.Domain.Constraints) != 0 {
		t.Errorf("constraints = %v, want none (the grid is the host's, not one block)", spec.Domain.Constraints)
	}
	// the launch, then every size doubled plus one, apart
	wantSweep := []map[string]int64{{"rows": 4, "cols": 4}, {"rows": 9, "cols": 11}}
	if !reflect.DeepEqual(spec.Domain.Sweep, wantSweep) {
		t.Errorf("sweep = %v, want %v", spec.Domain.Sweep, wantSweep)
	}
	if cp.Used != 1 || !reflect.DeepEqual(cp.Cases[0].Sizes, map[string]int64{"rows": 4, "cols": 4}) {
		t.Errorf("captured cases = %+v, want the one launch at rows = cols = 4", cp.Cases)
	}
}

// Without the launcher's word (a host function that takes raw pointers and
// integers it does not relate), the same launch keeps today's one shape:
// 4 names both sizes, so neither is a symbol.
func TestSpecFromLaunchesWithoutTheLauncherStaysFixed(t *testing.T) {
	k := rowScaleKernel(t)
	k.launcher = nil
	spec, _, err := SpecFromLaunches(k, rowScaleLaunch(t, 4, 4))
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Symbols) != 0 {
		t.Errorf("symbols = %v, want none (rows = cols at the only launch)", spec.Symbols)
	}
}

// A size the launcher computes from a tensor the sweep would reshape, and
// the spec fixes (total = out.numel(), no symbol's value), frees nothing of
// that tensor: sweeping b or n alone would leave total behind.
func TestHostFreeBlocksWhatAFixedSizeIsComputedFrom(t *testing.T) {
	root := writeRepo(t, map[string]string{"csrc/k.cu": `#include <torch/extension.h>
__global__ void gather_kernel(int b, int n, int total, const float* x, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) out[i] = x[i % n];
}
void gather(int b, int n, torch::Tensor x, torch::Tensor out) {
  int total = out.numel();
  gather_kernel<<<1, 256>>>(b, n, total, x.data_ptr<float>(), out.data_ptr<float>());
}
`})
	inv, _ := Discover(context.Background(), root, nil)
	var k *Kernel
	for _, x := range inv.Kernels {
		if x.Name == "gather_kernel" {
			k = x
		}
	}
	if k == nil || k.launcher == nil {
		t.Fatalf("gather_kernel not discovered with its launcher: %+v", k)
	}
	sc := func(v int64) LaunchArg {
		return LaunchArg{Kind: "scalar", DType: "int32", Value: json.RawMessage(fmt.Sprint(v))}
	}
	buf := func(shape ...int64) LaunchArg {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		return LaunchArg{Kind: "pointer", DType: "float32", ExtentBytes: 4 * n, ShapeHint: shape, Alloc: &LaunchAlloc{}}
	}
	// b = 3, n = 5, out = [3, 5] with total = 15 fixed: b and n name out's dims
	l := CapturedLaunch{Kernel: "gather_kernel", Grid: [3]int64{1, 1, 1}, Block: [3]int64{256, 1, 1},
		Args: []LaunchArg{sc(3), sc(5), sc(7), buf(5), buf(3, 5)}}
	sh, err := shapeWith(k, l, nil, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if free := sh.hostFree(); len(free) != 0 {
		t.Errorf("free = %v, want none (total = out.numel() is fixed while out is [b, n])", free)
	}
}

// Where the host's sizes widened the spec, the launches' own spec stays at
// hand: UseNarrow makes it the kernel's (the one shape, no symbols), for the
// validator to fall back to where the wider proof fails.
func TestUseNarrowRestoresTheLaunchesSpec(t *testing.T) {
	k := rowScaleKernel(t)
	spec, cp, err := SpecFromLaunches(k, rowScaleLaunch(t, 4, 4))
	if err != nil {
		t.Fatal(err)
	}
	k.UseCapture(spec, cp)
	if !k.UseNarrow() {
		t.Fatal("no narrow spec kept for a host-widened capture")
	}
	if len(k.Spec.Symbols) != 0 || len(k.Captured.Cases) != 1 || len(k.Captured.Cases[0].Sizes) != 0 {
		t.Errorf("narrow spec symbols %v, cases %+v: want the launch's one shape", k.Spec.Symbols, k.Captured.Cases)
	}
	if k.UseNarrow() {
		t.Error("a second UseNarrow found another spec")
	}
}

// An integer the launcher computes from the sizes it names (half = cols /
// 2) is a size of the spec, not a number it fixes: rows and cols stay free,
// and half follows cols in the sweep.
func TestSpecFromLaunchesSizeTheLauncherComputes(t *testing.T) {
	src := strings.NewReplacer("int rows, int cols)", "int rows, int cols, int half)",
		"out[i] = x[i] * s[i / cols];", "out[i] = x[i] * s[i / cols] + (i % cols < half ? 1.0f : 0.0f);",
		"const int rows = x.size(0), cols = x.size(1);", "const int rows = x.size(0), cols = x.size(1);\n  const int half = cols / 2;",
		"out.data_ptr<float>(), rows, cols);", "out.data_ptr<float>(), rows, cols, half);").Replace(rowScaleRepo)
	root := writeRepo(t, map[string]string{"csrc/row_scale.cu": src})
	inv, _ := Discover(context.Background(), root, nil)
	var k *Kernel
	for _, x := range inv.Kernels {
		if x.Name == "row_scale_kernel" {
			k = x
		}
	}
	if k == nil {
		t.Fatal("row_scale_kernel not discovered")
	}
	ls := rowScaleLaunch(t, 4, 4)
	half := LaunchArg{Index: 5, Name: "half", Kind: "scalar", CType: "int", DType: "int32", Value: json.RawMessage("2")}
	ls[0].Args = append(ls[0].Args, half)
	spec, _, err := SpecFromLaunches(k, ls)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, p := range spec.Params {
		if p.Name == "half" {
			got = p.Role + " " + p.Expr
		}
	}
	if got != "size cols / 2" {
		t.Errorf("half = %q, want size cols / 2", got)
	}
	if want := []map[string]int64{{"rows": 4, "cols": 4}, {"rows": 9, "cols": 11}}; !reflect.DeepEqual(spec.Domain.Sweep, want) {
		t.Errorf("sweep = %v, want %v", spec.Domain.Sweep, want)
	}
}

// An integer parameter of the host equal by value to a dim of a tensor the
// host reads its other sizes from (mmcv's carafe: scale_factor 2, the
// output's batch 2, channels = output.size(1)) is not freed: the equality
// is as likely a coincidence as a relation.
func TestHostFreeKeepsAParameterEqualToADimOfAReadTensor(t *testing.T) {
	root := writeRepo(t, map[string]string{"csrc/k.cu": `#include <torch/extension.h>
__global__ void up_kernel(const float* x, float* out, int scale, int channels) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = x[i / scale] * channels;
}
void up(torch::Tensor x, torch::Tensor out, int scale) {
  int channels = out.size(1);
  up_kernel<<<1, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), scale, channels);
}
`})
	inv, _ := Discover(context.Background(), root, nil)
	var k *Kernel
	for _, x := range inv.Kernels {
		if x.Name == "up_kernel" {
			k = x
		}
	}
	if k == nil || k.launcher == nil {
		t.Fatalf("up_kernel not discovered with its launcher: %+v", k)
	}
	sc := func(v int64) LaunchArg {
		return LaunchArg{Kind: "scalar", DType: "int32", Value: json.RawMessage(fmt.Sprint(v))}
	}
	buf := func(shape ...int64) LaunchArg {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		return LaunchArg{Kind: "pointer", DType: "float32", ExtentBytes: 4 * n, ShapeHint: shape, Alloc: &LaunchAlloc{}}
	}
	// out is [2, 5]: its batch 2 equals scale, its channels the host reads
	l := CapturedLaunch{Kernel: "up_kernel", Grid: [3]int64{1, 1, 1}, Block: [3]int64{256, 1, 1},
		Args: []LaunchArg{buf(3), buf(2, 5), sc(2), sc(5)}}
	sh, err := shapeWith(k, l, nil, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if free := sh.hostFree(); slices.Contains(free, "scale") {
		t.Errorf("free = %v: scale names out's batch by value only", free)
	}
}
