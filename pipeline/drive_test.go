package pipeline

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

var updateDrive = flag.Bool("update-drive", false, "rewrite fixtures/drive_ops/want.json")

// TestDriveOps: the ops of fixtures/drive_ops as the driver sees them: the
// pybind11 m.def names, each argument's kind (the rank its host code
// indexes, a scalar's value), the half dtype its AT_DISPATCH lists, the
// kernels its host code launches, and the host checks with their messages;
// the driver the template makes is Python.
func TestDriveOps(t *testing.T) {
	ext := &kernels.Extension{Origin: kernels.OriginCUDAExtension, Module: "drive_ops_ext", Sources: []string{"csrc/ops.cu"}}
	names := []string{"scale_add_kernel", "row_sum_kernel", "channel_bias_kernel", "half_scale_kernel", "gather_kernel", "unused_fill_kernel"}
	ops, checks := driveOps("../fixtures/drive_ops", ext, names)
	got := map[string]string{}
	var order []string
	for _, o := range ops {
		order = append(order, o.Name)
		var ps []string
		for _, p := range o.Params {
			b, _ := json.Marshal(p.Value)
			ps = append(ps, p.Name+":"+p.Kind+":"+string(rune('0'+p.Rank))+":"+string(b))
		}
		got[o.Name] = strings.Join(ps, " ") + " | " + strings.Join(o.Dtypes, ",") + " | " + strings.Join(o.Kernels, ",") + " | " + o.Unsupported
	}
	if want := []string{"scale_add", "row_sum", "channel_bias", "half_scale", "gather"}; !slices.Equal(order, want) {
		t.Fatalf("ops %v, want %v", order, want)
	}
	want := map[string]string{
		"scale_add":    "x:tensor:0:null y:tensor:0:null alpha:float:0:0.5 | float16 | scale_add_kernel | ",
		"row_sum":      "x:tensor:2:null |  | row_sum_kernel | ",
		"channel_bias": "x:tensor:4:null bias:tensor:1:null |  | channel_bias_kernel | ",
		"half_scale":   "x:tensor:0:null |  | half_scale_kernel | ",
	}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s: %q\nwant %q", op, got[op], w)
		}
	}
	has := func(cond, msg string) bool {
		return slices.Contains(checks, driveCheck{Cond: cond, Message: msg})
	}
	if !has("x.dim() == 3", "") || !has("x.scalar_type() == at::kHalf", "half_scale: x must be float16") ||
		!has("x.size(1) == bias.size(0)", "channel_bias: one bias per channel") {
		t.Errorf("host checks %+v", checks)
	}
	src, err := driverSource(ext, ops, checks, driveOpTime, driveAllTime)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("python3"); err == nil {
		cmd := exec.Command("python3", "-c", "import ast, sys; ast.parse(sys.stdin.read())")
		cmd.Stdin = strings.NewReader(src)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the driver is not Python: %v\n%s", err, out)
		}
	}
}

// driveHost is a fake host that runs the op driver: for a driver entry it
// writes the records and the launches its fields name.
type driveHost struct {
	fakeHost
	records []driveRecord
}

func (h *driveHost) Run(ctx context.Context, req CaptureRun) (*CaptureResult, error) {
	if !isDriverEntry(req.Entry) {
		return h.fakeHost.Run(ctx, req)
	}
	res, err := h.fakeHost.Run(ctx, req)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(h.records)
	return res, os.WriteFile(filepath.Join(req.CaptureDir, "drive.json"), b, 0o644)
}

const driveInlineOps = `import torch
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
__global__ void a_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void b_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] + 1.0f; }
__global__ void c_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = -x[i]; }
torch::Tensor op_a(torch::Tensor x) {
  auto y = torch::empty_like(x);
  a_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return y;
}
torch::Tensor op_b(torch::Tensor x, torch::Tensor w) {
  TORCH_CHECK(x.size(0) == w.size(0) * 3 + 1, "op_b: x and w do not match");
  auto y = torch::empty_like(x);
  b_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return y;
}
"""

ops = load_inline(name="drive_inline", cpp_sources="torch::Tensor op_a(torch::Tensor x); torch::Tensor op_b(torch::Tensor x, torch::Tensor w);",
                  cuda_sources=cuda_src, functions=["op_a", "op_b"])
`

const driveInlineTest = `from ops import ops


def test_a():
    ops.op_a(__import__("torch").ones(8).cuda())
`

// TestDriveReasons: without the tests (NoTests: the default path) the op
// driver is the only entry run; the kernel of the op it ran gets the spec
// "driven", the kernel of the op a host check stopped says so with
// CAP-DRIVE-CHECK and the check, a kernel no op launches CAP-NOT-LAUNCHED;
// the driver's run is cached by content like a test's.
func TestDriveReasons(t *testing.T) {
	root := t.TempDir()
	for rel, body := range map[string]string{"ops.py": driveInlineOps, "test_ops.py": driveInlineTest} {
		if err := os.WriteFile(filepath.Join(root, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host := &driveHost{fakeHost: fakeHost{launches: map[string]int{"a_kernel": 300}}, records: []driveRecord{
		{Op: "op_a", Status: "ok", Variants: []string{"float32"}, Tries: 1},
		{Op: "op_b", Status: "failed", Code: CodeDriveCheck, Error: "op_b: x and w do not match", Check: "x.size(0) == w.size(0) * 3 + 1", Tries: 1},
	}}
	cache := t.TempDir()
	r := runCaptureStage(t, root, &CaptureStage{Host: host, CacheDir: cache, NoTests: true})
	by := map[string]*Kernel{}
	for _, k := range r.Kernels {
		by[k.Name] = k
	}
	if len(host.runs) != 1 || !isDriverEntry(host.runs[0]) {
		t.Fatalf("runs %d (want the op driver alone, no test)", len(host.runs))
	}
	if !strings.Contains(host.runs[0][1], `\"name\":\"op_b\"`) {
		t.Errorf("the driver does not call op_b")
	}
	if a := by["a_kernel"]; a == nil || a.SpecSource != SpecDriven || a.Captured != 1 || a.BuildReason != nil {
		t.Errorf("a_kernel: %+v", a)
	}
	b := by["b_kernel"]
	if b == nil || b.BuildReason == nil || b.BuildReason.Code != CodeDriveCheck || !strings.Contains(b.BuildReason.Text, "x.size(0) == w.size(0) * 3 + 1") {
		t.Errorf("b_kernel: %+v %+v", b, b.BuildReason)
	}
	c := by["c_kernel"]
	if c == nil || c.BuildReason == nil || c.BuildReason.Code != CodeCaptureNotLaunched || !strings.Contains(c.BuildReason.Text, "no op's host code launches it") {
		t.Errorf("c_kernel: %+v %+v", c, c.BuildReason)
	}
	cs := &CaptureStage{Host: host, CacheDir: cache, NoTests: true}
	r2 := runCaptureStage(t, root, cs)
	if len(host.runs) != 1 || cs.Stats.RunsCached != 1 {
		t.Errorf("second run: %d runs, %d cached; want the driver's run from the cache", len(host.runs), cs.Stats.RunsCached)
	}
	for _, k := range r2.Kernels {
		if k.Name == "a_kernel" && k.SpecSource != SpecDriven {
			t.Errorf("cached: a_kernel spec source %q", k.SpecSource)
		}
	}
	// with the tests: the test launches a_kernel; the driver runs for the others
	host.runs = nil
	runCaptureStage(t, root, &CaptureStage{Host: host, CacheDir: t.TempDir()})
	if len(host.runs) != 2 || isDriverEntry(host.runs[0]) || !isDriverEntry(host.runs[1]) {
		t.Errorf("with tests: %d runs; want the test, then the op driver", len(host.runs))
	}
}

// driveWant is one kernel of fixtures/drive_ops/want.json.
type driveWant struct {
	SpecSource string   `json:"spec_source"`
	Code       string   `json:"code,omitempty"`
	Params     []string `json:"params,omitempty"` // name role dtype shape
	Grid       []string `json:"grid,omitempty"`
}

// TestDriveFixture builds fixtures/drive_ops (an extension with no tests
// and no Python caller) for the CPU and drives its ops: the elementwise op
// (and its float16 dispatch), the warp-plus-shared-memory row reduction,
// the op whose channel check needs a second try and the float16-only op
// whose rank and dtype come from its checks alone, and the gather whose
// index dtype only a data_ptr<int64_t>() error gives, all get captured specs;
// the kernel no op launches says so. Golden: fixtures/drive_ops/want.json.
func TestDriveFixture(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		py, _ = filepath.Abs("../.venv/bin/python")
	}
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("PALLASIFY_REQUIRE_STACK is set but the Python stack is missing (%s)", py)
		}
		t.Skip("no Python venv (make venv)")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed")
	}
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("../fixtures/drive_ops")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "want.json"))
	st := NewKernelStage()
	st.Capture = NewCaptureStage(CaptureConfig{Python: py, CacheDir: t.TempDir(), NoTests: true})
	r, err := Analyze(context.Background(), Options{Root: root, Discover: st})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]driveWant{}
	for _, k := range r.Kernels {
		w := driveWant{SpecSource: k.SpecSource}
		if k.BuildReason != nil {
			w.Code = k.BuildReason.Code
		}
		if ik := st.Lookup(k.ID); ik != nil && ik.Spec != nil && k.SpecSource == SpecDriven {
			for _, p := range ik.Spec.Params {
				w.Params = append(w.Params, strings.Join([]string{p.Name, p.Role, p.DType, strings.Join(p.Shape, "x")}, " "))
			}
			w.Grid = ik.Spec.Launch.Grid[:]
		}
		got[k.Name] = w
	}
	b, _ := json.MarshalIndent(got, "", "  ")
	b = append(b, '\n')
	golden := "../fixtures/drive_ops/want.json"
	if *updateDrive {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(b) {
		t.Errorf("kernels differ from %s (go test -run TestDriveFixture -update-drive):\n%s", golden, b)
	}
}
