package pipeline

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// A KernelBench-style load_inline module with five kernels: a and c are
// launched from the op with data_ptr (static inference reads them), b, d and
// e through a raw-pointer helper with pointer arithmetic and a grid helper (it
// cannot). The driver's run launches a and
// b; d has a user spec file; a has one too.
const captureOps = `import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
__global__ void a_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
__global__ void b_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] + 1.0f; }
__global__ void c_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * x[i]; }
__global__ void d_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = -x[i]; }
__global__ void e_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] - 1.0f; }
static int blocks(int n) { return std::min<long>((n + 255) / 256, 4096L); }
static void launch_raw(const float* x, float* y, int n) {
  b_kernel<<<blocks(n), 256>>>(x, y + 0 * n, n);
  d_kernel<<<blocks(n), 256>>>(x, y + 0 * n, n);
  e_kernel<<<blocks(n), 256>>>(x, y + 0 * n, n);
}
torch::Tensor fused(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  a_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  c_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  launch_raw(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""

fused = load_inline(name="fused_ops", cpp_sources="torch::Tensor fused(torch::Tensor x);", cuda_sources=cuda_src, functions=["fused"])


class ModelNew(nn.Module):
    def forward(self, x):
        return fused.fused(x)
`

const captureRef = `import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x - 1


def get_inputs():
    return [torch.randn(300).cuda()]


def get_init_inputs():
    return []
`

const userSpecYAML = `name: %s
class: elementwise
symbols: [n]
params:
  - {name: x, kind: pointer, ctype: "const float*", dtype: float32, role: input, shape: [n]}
  - {name: y, kind: pointer, ctype: "float*", dtype: float32, role: output, shape: [n]}
  - {name: n, kind: scalar, ctype: int, dtype: int32, role: size, expr: n}
launch:
  grid: ["(n + 255) / 256", "1", "1"]
  block: ["256", "1", "1"]
  shared_bytes: "0"
deterministic: true
`

// fakeHost builds nothing and "runs" an entry by writing the launches its
// script names (kernel -> n) into the capture dir, as the emulator would.
type fakeHost struct {
	mu       sync.Mutex
	launches map[string]int // kernel name -> n, for every entry
	builds   []BuildRequest
	runs     [][]string
	pp       int
	fail     *BuildFailure
}

func (f *fakeHost) Build(_ context.Context, req BuildRequest) (*BuiltExtension, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.builds = append(f.builds, req)
	if f.fail != nil {
		return nil, f.fail
	}
	return &BuiltExtension{Module: req.Module, Key: "key-" + req.Module}, nil
}

func (f *fakeHost) Run(_ context.Context, req CaptureRun) (*CaptureResult, error) {
	f.mu.Lock()
	f.runs = append(f.runs, req.Entry)
	f.mu.Unlock()
	var lines []string
	seq := 0
	for _, name := range sortedKeys(f.launches) {
		n := f.launches[name]
		seq++
		lines = append(lines, writeFakeLaunch(req.CaptureDir, seq, name, n))
	}
	if err := os.WriteFile(filepath.Join(req.CaptureDir, "launches.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &CaptureResult{ExitCode: 0, Passed: 1}, nil
}

func (f *fakeHost) ReadCaptures(dir string) ([]kernels.CapturedLaunch, error) {
	return kernels.ReadLaunches(dir)
}

func (f *fakeHost) Preprocess(_ context.Context, src string) (string, error) {
	f.mu.Lock()
	f.pp++
	f.mu.Unlock()
	return "// preprocessed\n" + src, nil
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func writeFakeLaunch(dir string, seq int, kernel string, n int) string {
	buf := func(tag string, f func(i int) float32) string {
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f(i)))
		}
		name := fmt.Sprintf("%06d_%s.bin", seq, tag)
		_ = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		return name
	}
	x := buf("a0", func(i int) float32 { return float32(i) })
	yb := buf("a1_before", func(int) float32 { return 0 })
	ya := buf("a1_after", func(i int) float32 { return 2 * float32(i) })
	ptr := func(i int, name, ctype string, read, written bool, before, after string) map[string]any {
		return map[string]any{"index": i, "name": name, "kind": "pointer", "ctype": ctype, "dtype": "float32",
			"alloc": map[string]any{"id": i, "bytes": 4 * n, "origin": "torch"}, "offset_bytes": 0, "extent_bytes": 4 * n,
			"shape_hint": []int{n}, "read": read, "written": written, "read_known": true, "before": before, "after": after}
	}
	l := map[string]any{"schema": kernels.CaptureSchema, "seq": seq, "kernel": kernel, "instance": kernel,
		"grid": []int{(n + 255) / 256, 1, 1}, "block": []int{256, 1, 1}, "shared_bytes": 0,
		"args": []any{ptr(0, "x", "const float*", true, false, x, x), ptr(1, "y", "float*", false, true, yb, ya),
			map[string]any{"index": 2, "name": "n", "kind": "scalar", "ctype": "int", "dtype": "int32", "value": n}},
		"roles_from": "access"}
	b, _ := json.Marshal(l)
	return string(b)
}

func captureTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("prompts/model_new_ex_fused.py", captureOps)
	write("prompts/model_ex_fused.py", captureRef)
	for _, name := range []string{"a_kernel", "d_kernel"} {
		id := kernels.KernelID("prompts/model_new_ex_fused.py", name)
		write(kernels.UserSpecPath(id), fmt.Sprintf(userSpecYAML, name))
	}
	return root
}

func runCaptureStage(t *testing.T, root string, cs *CaptureStage) *Run {
	t.Helper()
	st := NewKernelStage()
	st.Capture = cs
	r, err := Analyze(context.Background(), Options{Root: root, Discover: st})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCaptureSpecSources(t *testing.T) {
	root := captureTree(t)
	// without the capture stage: user spec, static, none
	r := runCaptureStage(t, root, nil)
	want := map[string]string{"a_kernel": SpecCallSites, "b_kernel": SpecNone, "c_kernel": SpecStatic, "d_kernel": SpecCallSites, "e_kernel": SpecNone}
	for _, k := range r.Kernels {
		if k.SpecSource != want[k.Name] {
			t.Errorf("no capture: %s spec source %q, want %q", k.Name, k.SpecSource, want[k.Name])
		}
	}

	host := &fakeHost{launches: map[string]int{"a_kernel": 300, "b_kernel": 300}}
	cs := &CaptureStage{Host: host, CacheDir: t.TempDir(), NoDrive: true}
	r = runCaptureStage(t, root, cs)
	// tests first (over a user spec and static inference), then the user
	// spec, then static inference
	want = map[string]string{"a_kernel": SpecTests, "b_kernel": SpecTests, "c_kernel": SpecStatic, "d_kernel": SpecCallSites, "e_kernel": SpecNone}
	for _, k := range r.Kernels {
		if k.SpecSource != want[k.Name] {
			t.Errorf("%s spec source %q, want %q", k.Name, k.SpecSource, want[k.Name])
		}
		if !k.BuiltCPU || k.BuildReason != nil && k.SpecSource == SpecTests {
			t.Errorf("%s: built %v reason %+v", k.Name, k.BuiltCPU, k.BuildReason)
		}
		switch k.Name {
		case "a_kernel", "b_kernel":
			if k.Captured != 1 || !k.Emulated || k.TestsPassed != 1 || k.SpecStatus != kernels.SpecCaptured {
				t.Errorf("%s: captured %d emulated %v passed %d status %s", k.Name, k.Captured, k.Emulated, k.TestsPassed, k.SpecStatus)
			}
		default:
			if k.Captured != 0 || k.BuildReason == nil || k.BuildReason.Code != CodeCaptureNotLaunched {
				t.Errorf("%s: captured %d reason %+v", k.Name, k.Captured, k.BuildReason)
			}
		}
	}
	if len(host.builds) != 1 || host.builds[0].Inline == nil || host.builds[0].Module != "fused_ops" ||
		len(host.builds[0].Inline.Functions) != 1 || !strings.Contains(host.builds[0].Inline.CUDA[0], "a_kernel") {
		t.Fatalf("builds %+v", host.builds)
	}
	if len(host.runs) != 1 || host.runs[0][0] != "-c" || !strings.Contains(host.runs[0][1], `"prompts/model_ex_fused.py"`) ||
		!strings.Contains(host.runs[0][1], "ModelNew(*init)(*inputs)") {
		t.Fatalf("runs %q", host.runs)
	}
	// the captured spec and cases reach the validator's kernel
	st := NewKernelStage()
	st.Capture = &CaptureStage{Host: host, CacheDir: cs.CacheDir, NoDrive: true}
	rr := &Run{Root: root}
	for _, f := range r.Files {
		rr.Files = append(rr.Files, &File{Path: f.Path, Lang: f.Lang})
	}
	if err := st.Run(context.Background(), rr); err != nil {
		t.Fatal(err)
	}
	for _, pk := range rr.Kernels {
		kk := st.Lookup(pk.ID)
		if pk.Name == "b_kernel" {
			if kk.Captured == nil || len(kk.Captured.Cases) != 1 || kk.Spec.Params[2].Role != "size" || !strings.HasPrefix(kk.Unit.Source, "// preprocessed") {
				t.Errorf("b_kernel: captured %+v spec %+v unit %.40q", kk.Captured, kk.Spec, kk.Unit.Source)
			}
		}
	}
}

func TestCaptureCache(t *testing.T) {
	root := captureTree(t)
	cache := t.TempDir()
	h1 := &fakeHost{launches: map[string]int{"a_kernel": 300, "b_kernel": 300}}
	r1 := runCaptureStage(t, root, &CaptureStage{Host: h1, CacheDir: cache, NoDrive: true})
	if len(h1.runs) != 1 || h1.pp == 0 {
		t.Fatalf("first run: %d runs, %d preprocessed", len(h1.runs), h1.pp)
	}
	// a second run over the same tree re-captures nothing and preprocesses
	// nothing; the specs are the same
	h2 := &fakeHost{launches: map[string]int{"a_kernel": 999}}
	cs2 := &CaptureStage{Host: h2, CacheDir: cache, NoDrive: true}
	r2 := runCaptureStage(t, root, cs2)
	if len(h2.runs) != 0 || h2.pp != 0 || cs2.Stats.RunsCached != 1 {
		t.Fatalf("second run: %d runs, %d preprocessed, stats %+v", len(h2.runs), h2.pp, cs2.Stats)
	}
	for i := range r1.Kernels {
		a, b := r1.Kernels[i], r2.Kernels[i]
		if a.SpecSource != b.SpecSource || a.Captured != b.Captured {
			t.Errorf("%s: first %s/%d, second %s/%d", a.Name, a.SpecSource, a.Captured, b.SpecSource, b.Captured)
		}
	}
	// an edited test input invalidates the capture
	if err := os.WriteFile(filepath.Join(root, "prompts", "model_ex_fused.py"), []byte(captureRef+"\n# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h3 := &fakeHost{launches: map[string]int{"a_kernel": 300}}
	runCaptureStage(t, root, &CaptureStage{Host: h3, CacheDir: cache, NoDrive: true})
	if len(h3.runs) != 1 {
		t.Errorf("after an edit: %d runs, want 1", len(h3.runs))
	}
}

func TestCaptureBuildRefused(t *testing.T) {
	root := captureTree(t)
	host := &fakeHost{fail: &BuildFailure{Code: "EMU-UNSUPPORTED", Construct: "texture<float, 2>"}}
	r := runCaptureStage(t, root, &CaptureStage{Host: host, NoDrive: true})
	for _, k := range r.Kernels {
		if k.BuiltCPU || k.BuildReason == nil || k.BuildReason.Code != "EMU-UNSUPPORTED" || k.BuildReason.Text != "texture<float, 2>" {
			t.Errorf("%s: built %v reason %+v", k.Name, k.BuiltCPU, k.BuildReason)
		}
		if k.SpecSource == SpecTests {
			t.Errorf("%s: spec from tests without a build", k.Name)
		}
	}
	if len(host.runs) != 0 {
		t.Errorf("ran %d entries without a build", len(host.runs))
	}
}

// The entries of an extension: each test file importing one of its wrapper
// modules (or their package) runs under pytest; unrelated tests do not.
func TestCaptureTestEntries(t *testing.T) {
	root := t.TempDir()
	for rel, body := range map[string]string{
		"setup.py":              "from torch.utils.cpp_extension import CUDAExtension\nCUDAExtension(name='lib._C', sources=['csrc/k.cu'])\n",
		"csrc/k.cu":             "__global__ void k_kernel(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 2 * x[i]; }\n",
		"lib/__init__.py":       "",
		"lib/ops.py":            "from . import _C\n\n\ndef zero(x):\n    return _C.zero(x)\n",
		"tests/test_ops.py":     "from lib.ops import zero\n",
		"tests/test_pkg.py":     "import lib.ops as o\n",
		"tests/test_other.py":   "import numpy\n",
		"tests/helpers.py":      "from lib.ops import zero\n",
		"lib/tests/ops_test.py": "from lib import ops\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host := &fakeHost{launches: map[string]int{"k_kernel": 64}}
	r := runCaptureStage(t, root, &CaptureStage{Host: host, NoDrive: true})
	var got []string
	for _, e := range host.runs {
		got = append(got, e[len(e)-1])
	}
	want := []string{"lib/tests/ops_test.py", "tests/test_ops.py", "tests/test_pkg.py"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("entries %v, want %v", got, want)
	}
	if len(host.builds) != 1 || host.builds[0].Module != "lib._C" || host.builds[0].Sources[0] != "csrc/k.cu" {
		t.Errorf("builds %+v", host.builds)
	}
	if len(r.Kernels) != 1 || r.Kernels[0].SpecSource != SpecTests || r.Kernels[0].Captured != 3 || r.Kernels[0].TestsPassed != 3 {
		t.Errorf("kernel %+v", r.Kernels[0])
	}
}

// A kernel no test launched is explained by its own op's test (the one whose
// stem is part of the kernel's file or name), not by the first failure.
func TestNotLaunchedNamesTheOpsTest(t *testing.T) {
	runs := []entryRun{
		{"tests/test_ops/test_carafe.py", "tests/test_ops/test_carafe.py failed: E FileNotFoundError: carafe_feat.bin"},
		{"tests/test_ops/test_gather_points.py", ""},
		{"tests/test_ops/test_psa_mask.py", "tests/test_ops/test_psa_mask.py failed: E FileNotFoundError: psa_input.bin"},
	}
	for _, c := range []struct{ path, name, want string }{
		{"mmcv/ops/csrc/common/cuda/psamask_cuda_kernel.cuh", "psamask_collect_forward_cuda", "psa_input.bin"},
		{"mmcv/ops/csrc/common/cuda/gather_points_cuda_kernel.cuh", "gather_points_backward_cuda_kernel",
			"tests/test_ops/test_gather_points.py passed without launching it"},
		{"mmcv/ops/csrc/common/cuda/nms_cuda_kernel.cuh", "nms_cuda", "carafe_feat.bin"}, // no test of its own: the first failure
	} {
		k := &kernels.Kernel{Path: c.path, Name: c.name}
		if got := notLaunchedWhy(k, runs); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to name %q", c.name, got, c.want)
		}
	}
}
