package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/sandbox"
)

func needGXX(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed")
	}
}

// testSandbox returns a working sandbox: bubblewrap when it runs here,
// otherwise an unconfined one (logged).
func testSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb := &sandbox.Sandbox{}
	if err := sb.Check(context.Background()); err != nil {
		t.Logf("bubblewrap unavailable, running unconfined: %v", err)
		sb.Disabled = true
	}
	return sb
}

const prelude = `#include "cudaemu.h"
#include <cmath>
#include <algorithm>
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } } while (0)
`

// buildCase compiles testdata/<name>/kernel.cu (through Prepare) with its
// main.cc driver and runs it in the sandbox; it returns the output and
// whether the program exited 0.
func buildCase(t *testing.T, sb *sandbox.Sandbox, name string, flags ...string) (string, bool, time.Duration) {
	t.Helper()
	kernel, err := os.ReadFile(filepath.Join("testdata", name, "kernel.cu"))
	if err != nil {
		t.Fatal(err)
	}
	driver, err := os.ReadFile(filepath.Join("testdata", name, "main.cc"))
	if err != nil {
		t.Fatal(err)
	}
	tu, probs := Prepare(StripHost(string(kernel)))
	if HasErrors(probs) {
		t.Fatalf("Prepare: %v", probs)
	}
	src := prelude + "#line 1 \"kernel.cu\"\n" + tu + "\n#line 1 \"main.cc\"\n" + string(driver)
	dir := t.TempDir()
	start := time.Now()
	exe, log, err := CompileProgram(context.Background(), sb, dir, "prog", src, Options{Flags: flags})
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, log)
	}
	compile := time.Since(start)
	out, err := sb.Run(context.Background(), dir, sandbox.Limits{CPUSeconds: 60, MemoryMB: 2048, Wall: time.Minute}, exe)
	return string(out), err == nil, compile
}

func TestKernels(t *testing.T) {
	needGXX(t)
	sb := testSandbox(t)
	cases := []struct {
		name    string
		flags   []string
		wantOK  bool
		wantOut []string // substrings of the output
	}{
		{name: "warp_reduce", wantOK: true},
		{name: "matmul_tiled", wantOK: true},
		{name: "histogram", wantOK: true},
		{name: "block_scan", wantOK: true},
		{name: "half_convert", wantOK: true},
		{name: "grid_stride", wantOK: true},
		{name: "deadlock", wantOK: true, wantOut: []string{
			"ERR-MIXED: cudaemu: warp deadlock in block (0,0,0), warp 0: lane 1 waits in __shfl_xor_sync() (mask 0xffffffff) but lane 0 waits at __syncthreads()",
			"ERR-LAUNCH: cudaemu: invalid launch: block (2048,1,1) exceeds CUDA limits"}},
		{name: "deadlock", flags: []string{"-DCUDAEMU_STRICT_BARRIERS=1"}, wantOK: true, wantOut: []string{
			"ERR-STRICT: cudaemu: barrier deadlock in block (1,0,0)", "thread (0,0,0) waits at __syncthreads() but thread (44,0,0) has exited",
			"ERR-MIXED: cudaemu: warp deadlock"}},
		{name: "coop_groups", wantOK: true},
		{name: "realworld", wantOK: true},
		// The portable ucontext fibers (used off x86-64).
		{name: "warp_reduce", flags: []string{"-DCUDAEMU_UCONTEXT=1"}, wantOK: true},
		{name: "coop_groups", flags: []string{"-DCUDAEMU_UCONTEXT=1"}, wantOK: true},
		{name: "faults", flags: []string{"-DCUDAEMU_UCONTEXT=1"}, wantOK: true, wantOut: faultOut},
		{name: "torch_compat", wantOK: true, wantOut: []string{"device printf: thread 1 sum 6.00"}},
		{name: "faults", wantOK: true, wantOut: faultOut},
		{name: "faults", flags: []string{"-DCUDAEMU_NOSYNC=1"}, wantOK: true, wantOut: faultOut},
		{name: "histogram", flags: []string{"-DCUDAEMU_NOSYNC=1"}, wantOK: false, wantOut: []string{
			"launch failed: cudaemu: __syncthreads() reached in a kernel built without synchronisation support"}},
		{name: "warp_deadlock", wantOK: true, wantOut: []string{"warp deadlock in block (0,0,0), warp 1", "__shfl_down_sync()", "has exited"}},
	}
	for _, c := range cases {
		t.Run(c.name+strings.Join(c.flags, ""), func(t *testing.T) {
			t.Parallel()
			out, ok, _ := buildCase(t, sb, c.name, c.flags...)
			if ok != c.wantOK {
				t.Fatalf("exit ok=%v, want %v; output:\n%s", ok, c.wantOK, out)
			}
			for _, w := range c.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

var faultOut = []string{
	"ERR-OOB: cudaemu: segmentation fault at address", "out-of-bounds memory access",
	"ERR-SPIN: cudaemu: launch exceeded its CPU-time limit of 1 s", "ERR-STACK: cudaemu: segmentation fault", "fiber stack overflow",
	"ERR-FPE: cudaemu: arithmetic exception", "ERR-TRAP: cudaemu: __trap() called in block (0,0,0), thread (3,0,0)",
	"ERR-ASSERT: cudaemu: device assertion failed: x[threadIdx.x] >= 0.0f (kernel.cu:", "thread (3,0,0)"}

// TestPerformance measures compile + run of a 1M-element elementwise kernel
// and a 256x256x256 tiled matmul.
func TestPerformance(t *testing.T) {
	needGXX(t)
	if testing.Short() {
		t.Skip("short")
	}
	sb := testSandbox(t)
	for _, c := range []struct {
		name  string
		flags []string
	}{{"elementwise_1m", nil}, {"elementwise_1m", []string{"-DCUDAEMU_NOSYNC=1"}}, {"matmul_256", nil}} {
		t.Run(c.name+strings.Join(c.flags, ""), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			out, ok, compile := buildCase(t, sb, c.name, c.flags...)
			if !ok {
				t.Fatalf("failed:\n%s", out)
			}
			t.Logf("%s %v: compile %.2fs, compile+run %.2fs; %s", c.name, c.flags, compile.Seconds(), time.Since(start).Seconds(), strings.TrimSpace(out))
		})
	}
}

func TestPrepare(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		want      []string // substrings of the output
		notWant   []string
		construct []string // constructs of error problems, in order
		warnings  int
	}{
		{
			name: "includes and extern shared",
			src: "#include <cuda_runtime.h>\n#include <torch/extension.h>\n#include \"cuda_fp16.h\"\n#include <cstdint>\n" +
				"__global__ void k(float* y) {\n  extern __shared__ float buf[];\n  extern __shared__ __align__(sizeof(double)) unsigned char raw[];\n  static __shared__ int s[4];\n}\n",
			want: []string{"// [cudaemu] provided: #include <cuda_runtime.h>", "// [cudaemu] provided: #include <torch/extension.h>",
				"#include <cstdint>", "float* const buf = reinterpret_cast<float*>(::cudaemu::dyn_smem);",
				"unsigned char* const raw = reinterpret_cast<unsigned char*>(::cudaemu::dyn_smem);", "__shared__ int s[4];"},
			notWant: []string{"extern __shared__", "static __shared__"},
		},
		{
			name:      "inline asm",
			src:       "__device__ unsigned lane() {\n  unsigned r;\n  asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r));\n  return r;\n}\n",
			construct: []string{"inline asm"},
		},
		{
			name:      "textures grid sync clock",
			src:       "#include <cooperative_groups.h>\ntexture<float, 1> tex;\n__global__ void k(float* y) {\n  long long t0 = clock64();\n  y[0] = tex1Dfetch(tex, 0);\n  cooperative_groups::this_grid().sync();\n}\n",
			construct: []string{"texture reference", "clock64/clock (timing)", "texture fetch", "cooperative grid sync"},
		},
		{
			name:      "dynamic parallelism",
			src:       "__global__ void child() {}\n__global__ void parent() { child<<<1, 1>>>(); }\n",
			construct: []string{"kernel launch <<<...>>>"},
		},
		{
			name: "comments and strings are not code",
			src:  "// asm(\"x\") and clock64() in a comment\n__global__ void k() { printf(\"asm( tex2D( clock64()\\n\"); }\n",
		},
		{
			name:     "legacy warp-synchronous",
			src:      "__device__ void warp_reduce(volatile float* s, int t) { s[t] += s[t + 32]; s[t] += s[t + 16]; }\n__global__ void k(float* y) { __shared__ float s[64]; warp_reduce(s, threadIdx.x); }\n",
			warnings: 1,
		},
		{
			name:     "local include",
			src:      "#include \"helpers.cuh\"\n__global__ void k() {}\n",
			warnings: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, probs := Prepare(c.src)
			if strings.Count(out, "\n") != strings.Count(c.src, "\n") {
				t.Errorf("line count changed: %d -> %d", strings.Count(c.src, "\n"), strings.Count(out, "\n"))
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output still has %q:\n%s", w, out)
				}
			}
			var got []string
			warns := 0
			for _, p := range probs {
				if p.Severity == "error" {
					got = append(got, p.Construct)
					if !strings.Contains(p.Message, p.Construct) {
						t.Errorf("message %q does not name %q", p.Message, p.Construct)
					}
				} else {
					warns++
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.construct) && !(len(got) == 0 && len(c.construct) == 0) {
				t.Errorf("constructs %q, want %q (%v)", got, c.construct, probs)
			}
			if warns != c.warnings {
				t.Errorf("%d warnings, want %d: %v", warns, c.warnings, probs)
			}
			again, probs2 := Prepare(out)
			if again != out || len(probs2) != len(probs) {
				t.Errorf("Prepare is not idempotent")
			}
		})
	}
}

// TestUnsupportedDiagnostics: the header itself names constructs that slip
// past Prepare, and Compile refuses what Prepare flags without running g++.
func TestUnsupportedDiagnostics(t *testing.T) {
	needGXX(t)
	sb := testSandbox(t)
	ctx := context.Background()
	t.Run("header", func(t *testing.T) {
		src := "#include \"cudaemu.h\"\n__global__ void k(unsigned long long t, float* y) { y[0] = tex1Dfetch<float>(t, 0); }\nint main() {}\n"
		_, log, err := CompileProgram(ctx, sb, t.TempDir(), "prog", src, Options{})
		if err == nil || !strings.Contains(log, "unsupported construct: texture fetch tex1Dfetch") {
			t.Fatalf("err=%v log:\n%s", err, log)
		}
	})
	t.Run("compile refuses", func(t *testing.T) {
		tu := "__global__ void k(int* y) { asm(\"trap;\"); }\n"
		_, log, err := Compile(ctx, sb, t.TempDir(), tu, Kernel{Name: "k"})
		if err == nil || !strings.Contains(err.Error(), "inline asm") || !strings.Contains(log, "EMU-UNSUPPORTED") {
			t.Fatalf("err=%v log=%s", err, log)
		}
	})
	t.Run("compile error is trimmed", func(t *testing.T) {
		tu := "__global__ void k(float* y) { y[0] = undefined_a; y[1] = undefined_b; y[2] = undefined_c; y[3] = undefined_d; y[4] = undefined_e; }\n"
		_, log, err := Compile(ctx, sb, t.TempDir(), tu, Kernel{Name: "k"})
		if err == nil || !strings.Contains(log, "undefined_a") || strings.Contains(log, "undefined_e") || !strings.Contains(log, "trimmed") {
			t.Fatalf("err=%v log:\n%s", err, log)
		}
	})
}

const abiKernel = `#include <cuda_runtime.h>
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) scale_kernel(const T* __restrict__ x, T* __restrict__ y, T alpha, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + (T)threadIdx.x;
}
__global__ void sync_kernel(float* y) {
  float v = (float)threadIdx.x;
  if ((threadIdx.x & 31) == 0) __syncthreads();
  else v = __shfl_xor_sync(0xffffffff, v, 1);
  y[threadIdx.x] = v;
}
`

const abiDriver = `#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
typedef int (*launch_fn)(void**, const long long*, char*, int);
typedef const char* (*name_fn)(void);
int main(int argc, char** argv) {
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
  launch_fn launch = (launch_fn)dlsym(h, "pallasify_launch");
  name_fn name = (name_fn)dlsym(h, "pallasify_kernel_name");
  if (!launch || !name) { fprintf(stderr, "missing symbols\n"); return 3; }
  const int n = 1000;
  static float x[n], y[n];
  for (int i = 0; i < n; i++) { x[i] = i * 0.5f; y[i] = -1.0f; }
  float alpha = 3.0f;
  void* args[] = {x, y, &alpha, (void*)&n};
  long long cfg[7] = {(n + 127) / 128, 1, 1, 128, 1, 1, 0};
  char err[256] = "";
  int rc = launch(args, cfg, err, sizeof err);
  if (rc != 0) { fprintf(stderr, "launch: %s\n", err); return 4; }
  for (int i = 0; i < n; i++)
    if (y[i] != alpha * x[i] + (float)(i % 128)) { fprintf(stderr, "y[%d]=%g\n", i, y[i]); return 5; }
  long long bad[7] = {1, 1, 1, 0, 1, 1, 0};
  rc = launch(args, bad, err, sizeof err);
  printf("name=%s bad_rc=%d err=%s\n", name(), rc, err);
  return 0;
}
`

// TestABI compiles a template kernel into ref.so through Compile and calls
// it through pallasify_launch from a C++ driver (dlopen) and, when the venv
// exists, from Python ctypes.
func TestABI(t *testing.T) {
	needGXX(t)
	sb := testSandbox(t)
	ctx := context.Background()
	dir := t.TempDir()
	args, err := Instantiate(abiKernel, "scale_kernel", map[string]string{"T": "float", "BLOCK": "128"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(args) != "[float 128]" {
		t.Fatalf("Instantiate = %v", args)
	}
	params := []Param{{Name: "x", Kind: "pointer", DType: "float32"}, {Name: "y", Kind: "pointer", DType: "float32"},
		{Name: "alpha", Kind: "scalar", DType: "float32"}, {Name: "n", Kind: "scalar", DType: "int32"}}
	so, log, err := Compile(ctx, sb, dir, abiKernel, Kernel{Name: "scale_kernel", TemplateArgs: args, Params: params})
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, log)
	}
	nm, err := exec.Command("nm", "-D", "--defined-only", so).Output()
	if err == nil {
		exported := regexp.MustCompile(`(?m) T (\S+)$`).FindAllStringSubmatch(string(nm), -1)
		var names []string
		for _, e := range exported {
			names = append(names, e[1])
		}
		if fmt.Sprint(names) != "[pallasify_kernel_name pallasify_launch]" {
			t.Errorf("exported functions %v, want only the ABI", names)
		}
	}
	ddir := t.TempDir()
	exe, log, err := CompileProgram(ctx, sb, ddir, "driver", abiDriver, Options{})
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, log)
	}
	if err := os.Rename(so, filepath.Join(ddir, "ref.so")); err != nil {
		t.Fatal(err)
	}
	so = filepath.Join(ddir, "ref.so")
	out, err := sb.Run(ctx, ddir, sandbox.Limits{Wall: time.Minute}, exe, so)
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "name=scale_kernel<float, 128> bad_rc=1 err=cudaemu: invalid launch") {
		t.Errorf("driver output: %s", out)
	}

	t.Run("spec mismatch", func(t *testing.T) {
		wrong := []Param{{Name: "x", Kind: "pointer", DType: "uint8"}, {Name: "y", Kind: "pointer", DType: "float64"},
			{Name: "alpha", Kind: "pointer"}, {Name: "n", Kind: "scalar", DType: "int32"}}
		_, log, err := Compile(ctx, sb, t.TempDir(), abiKernel, Kernel{Name: "scale_kernel", TemplateArgs: args, Params: wrong})
		if err == nil || !strings.Contains(log, "parameter #0 'x'") || !strings.Contains(log, "parameter #1 'y'") || !strings.Contains(log, "parameter #2 'alpha' is a pointer in the spec") {
			t.Errorf("err=%v log:\n%s", err, log)
		}
		_, log, err = Compile(ctx, sb, t.TempDir(), abiKernel, Kernel{Name: "scale_kernel", TemplateArgs: args, Params: wrong[:3]})
		if err == nil || !strings.Contains(log, "the spec lists 3 parameter(s)") {
			t.Errorf("err=%v log:\n%s", err, log)
		}
	})

	t.Run("python ctypes", func(t *testing.T) {
		py := os.Getenv("PALLASIFY_PYTHON")
		if py == "" {
			py = filepath.Join("..", "..", ".venv", "bin", "python")
		}
		if _, err := os.Stat(py); err != nil {
			skipNoStack(t, py)
		}
		syncSo, log, err := Compile(ctx, sb, t.TempDir(), abiKernel, Kernel{Name: "sync_kernel"})
		if err != nil {
			t.Fatalf("compile: %v\n%s", err, log)
		}
		script := `
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.pallasify_launch.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong), ctypes.c_char_p, ctypes.c_int]
lib.pallasify_kernel_name.restype = ctypes.c_char_p
n = 300
x = (ctypes.c_float * n)(*[i * 0.25 for i in range(n)])
y = (ctypes.c_float * n)()
alpha = ctypes.c_float(2.0)
nn = ctypes.c_int(n)
args = (ctypes.c_void_p * 4)(ctypes.addressof(x), ctypes.addressof(y), ctypes.addressof(alpha), ctypes.addressof(nn))
cfg = (ctypes.c_longlong * 7)(3, 1, 1, 128, 1, 1, 0)
err = ctypes.create_string_buffer(512)
rc = lib.pallasify_launch(args, cfg, err, 512)
assert rc == 0, err.value
bad = [i for i in range(n) if y[i] != 2.0 * x[i] + (i % 128)]
assert not bad, bad[:5]
lib2 = ctypes.CDLL(sys.argv[2])
lib2.pallasify_launch.argtypes = lib.pallasify_launch.argtypes
z = (ctypes.c_float * 64)()
args2 = (ctypes.c_void_p * 1)(ctypes.addressof(z))
rc2 = lib2.pallasify_launch(args2, (ctypes.c_longlong * 7)(1, 1, 1, 64, 1, 1, 0), err, 512)
print("OK", lib.pallasify_kernel_name().decode(), rc2, err.value.decode())
`
		out, err := exec.Command(py, "-c", script, so, syncSo).CombinedOutput()
		if err != nil {
			t.Fatalf("python: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "OK scale_kernel<float, 128> 1 cudaemu: warp deadlock") {
			t.Errorf("python output: %s", out)
		}
	})
}

func TestNeedsFibers(t *testing.T) {
	cases := []struct {
		src  string
		want bool
	}{
		{"__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }", false},
		{"__global__ void k(float* y) { // __syncthreads() in a comment\n y[0] = 1.0f; }", false},
		{"__global__ void k(float* y) { __syncthreads(); }", true},
		{"__device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1); }", true},
		{"__global__ void k(unsigned* y) { y[0] = __activemask(); }", true},
		{"namespace cg = cooperative_groups;\n__global__ void k() { cg::sync(cg::this_thread_block()); }", true},
		{"__global__ void k() { auto b = this_thread_block(); b.sync(); }", true},
	}
	for _, c := range cases {
		if got := NeedsFibers(c.src); got != c.want {
			t.Errorf("NeedsFibers(%q) = %v, want %v", c.src, got, c.want)
		}
	}
}

func TestInstantiate(t *testing.T) {
	src := "template <typename T, int BLOCK = 256, typename Acc = float>\n__global__ void C10_LAUNCH_BOUNDS_1(BLOCK) k(const T* x, T* y) {}\ntemplate<class T> __device__ T f(T v) { return v; }\n"
	cases := []struct {
		args    map[string]string
		want    string
		wantErr bool
	}{
		{args: map[string]string{"T": "half"}, want: "[half]"},
		{args: map[string]string{"T": "float", "BLOCK": "128"}, want: "[float 128]"},
		{args: map[string]string{"T": "float", "Acc": "double"}, wantErr: true},
		{args: map[string]string{"BLOCK": "128"}, wantErr: true},
		{args: map[string]string{"T": "float", "U": "int"}, wantErr: true},
	}
	for _, c := range cases {
		got, err := Instantiate(src, "k", c.args)
		if (err != nil) != c.wantErr || (err == nil && fmt.Sprint(got) != c.want) {
			t.Errorf("Instantiate(%v) = %v, %v; want %s (err %v)", c.args, got, err, c.want, c.wantErr)
		}
	}
}

var globalRe = regexp.MustCompile(`(?s)(template\s*<[^{};]*>\s*)?__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(`)

// TestFixtureKernels compiles every fixture kernel (fixtures/kernels/*/
// kernel.cu, host code stripped; every __global__, templates instantiated
// with float and 128) into a reference library; TestFixtureReferences then
// runs those with a spec.json through the ABI.
func TestFixtureKernels(t *testing.T) {
	needGXX(t)
	files, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "kernels", "*", "kernel.cu"))
	if len(files) == 0 {
		t.Fatal("no fixture kernels under fixtures/kernels/*/kernel.cu")
	}
	sb := testSandbox(t)
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src := StripHost(string(raw))
			tu, probs := Prepare(src)
			if HasErrors(probs) {
				t.Fatalf("Prepare: %v", probs)
			}
			ms := globalRe.FindAllStringSubmatch(blankCommentsAndStrings(tu), -1)
			if len(ms) == 0 {
				t.Fatalf("no __global__ kernel found")
			}
			for _, m := range ms {
				k := Kernel{Name: m[2]}
				if m[1] != "" {
					targs := map[string]string{}
					for _, p := range splitTop(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(m[1]), "template")), ">")[1:]) {
						f := strings.Fields(strings.SplitN(p, "=", 2)[0])
						if len(f) == 2 && (f[0] == "typename" || f[0] == "class") {
							targs[f[1]] = "float"
						} else if len(f) == 2 && strings.Contains(p, "=") {
							continue
						} else if len(f) == 2 {
							targs[f[1]] = "128"
						}
					}
					a, err := Instantiate(tu, k.Name, targs)
					if err != nil {
						t.Fatalf("%s: %v", k.Name, err)
					}
					k.TemplateArgs = a
				}
				_, log, err := Compile(context.Background(), sb, t.TempDir(), tu, k)
				if err != nil {
					t.Fatalf("%s: %v\n%s", k.Instance(), err, log)
				}
			}
		})
	}
}

func TestStripHost(t *testing.T) {
	src := `#include <torch/extension.h>
#define N 4
#define HD __host__ __device__
#define HDI HD inline
namespace py = pybind11;
using namespace torch;
HDI float clampf(float v) { return v < 0 ? 0 : v; }
C10_HOST_DEVICE int twice(int v) { return 2 * v; }
struct P { float a; };
__device__ float f(float x) { return x; }
template <typename T>
__global__ void k(T* y) { y[0] = f(1.0f); }
torch::Tensor run(torch::Tensor x) {
  k<float><<<1, 1>>>(x.data_ptr<float>());
  return x;
}
static int helper(int a) { return a + 1; }
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
extern "C" {
__device__ float h(float x) { return x; }
}
namespace {
torch::Tensor inner(torch::Tensor x) { return x; }
__device__ float g(float x) { return x; }
}  // namespace
torch::Tensor declared(torch::Tensor x);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("run", &run, "run");
}
`
	out := StripHost(src)
	if strings.Count(out, "\n") != strings.Count(src, "\n") {
		t.Fatalf("line count changed")
	}
	for _, w := range []string{"#define N 4", "struct P { float a; };", "__device__ float f", "__global__ void k(T* y)", "__device__ float g", "__device__ float h", "constexpr int ceil_div", "HDI float clampf", "C10_HOST_DEVICE int twice"} {
		if !strings.Contains(out, w) {
			t.Errorf("lost %q:\n%s", w, out)
		}
	}
	for _, w := range []string{"<<<", "helper", "inner", "namespace py", "using namespace torch", "declared", "PYBIND11_MODULE", "m.def"} {
		if strings.Contains(out, w) {
			t.Errorf("kept %q:\n%s", w, out)
		}
	}
}

// skipNoStack skips a test that needs the venv's Python, or fails it under
// PALLASIFY_REQUIRE_STACK (make test).
func skipNoStack(t *testing.T, py string) {
	t.Helper()
	if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
		t.Fatalf("PALLASIFY_REQUIRE_STACK is set but there is no Python at %s (make venv)", py)
	}
	t.Skip("no Python venv (make venv)")
}

func venvPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		py = filepath.Join("..", "..", ".venv", "bin", "python")
	}
	if _, err := os.Stat(py); err != nil {
		skipNoStack(t, py)
	}
	abs, err := filepath.Abs(py)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestFixtureReferences builds every fixture kernel with a spec.json into
// ref.so (parameters checked against the spec), runs it through the ABI over
// the spec's sweep with NumPy inputs (venv Python, ctypes) and compares with
// the fixture's reference.py.
func TestFixtureReferences(t *testing.T) {
	needGXX(t)
	py := venvPython(t)
	specs, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "kernels", "*", "spec.json"))
	if len(specs) == 0 {
		t.Fatal("no fixtures/kernels/*/spec.json")
	}
	sb := testSandbox(t)
	check, err := filepath.Abs(filepath.Join("testdata", "fixture_check.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		dir := filepath.Dir(sp)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(sp)
			if err != nil {
				t.Fatal(err)
			}
			var spec kernels.Spec
			if err := json.Unmarshal(raw, &spec); err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(filepath.Join(dir, "kernel.cu"))
			if err != nil {
				t.Fatal(err)
			}
			tu, _ := Prepare(StripHost(string(src)))
			k, err := KernelFromSpec(tu, &spec)
			if err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			so, log, err := Compile(context.Background(), sb, work, tu, k)
			if err != nil {
				t.Fatalf("compile: %v\n%s", err, log)
			}
			ref, _ := filepath.Abs(filepath.Join(dir, "reference.py"))
			specAbs, _ := filepath.Abs(sp)
			out, err := exec.Command(py, check, specAbs, so, ref).CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Log(strings.TrimSpace(string(out)))
		})
	}
}
