package pallas

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

func TestGuardExtension(t *testing.T) {
	cases := []struct {
		name, in string
		lazy     bool
		want     string
	}{
		{"load_inline, lazy", "import torch\nfrom torch.utils.cpp_extension import load_inline\n\n_ext = load_inline(\n    name=\"x\",\n    functions=[\"f\"],\n)\n", true,
			"import torch\nfrom torch.utils.cpp_extension import load_inline\n\n# pallasify: guarded (built when the CUDA path first uses it)\n_ext = _pallas_ops.lazy_extension(\n    lambda: load_inline(\n        name=\"x\",\n        functions=[\"f\"],\n    )\n)\n"},
		{"load, no ops module", "import torch\nfrom torch.utils.cpp_extension import load\n\n_ext = load(\n    name=\"x\",\n    sources=[\"a.cu\"],\n)\n", false,
			"import torch\nfrom torch.utils.cpp_extension import load\n\n# pallasify: guarded (built only where CUDA is; tpu tensors use Pallas)\n_ext = None\nif torch.cuda.is_available():\n    _ext = load(\n        name=\"x\",\n        sources=[\"a.cu\"],\n    )\n"},
		{"no torch import", "from torch.utils.cpp_extension import load\next = load(name=\"e\", sources=[\"a.cu\"])\n", false,
			"from torch.utils.cpp_extension import load\n\n# pallasify: guarded (built only where CUDA is; tpu tensors use Pallas)\next = None\nif __import__(\"torch\").cuda.is_available():\n    ext = load(name=\"e\", sources=[\"a.cu\"])\n"},
		{"relative _C", "import torch\nfrom . import _C  # noqa\n", true,
			"import torch\n\ntry:\n    from . import _C  # noqa\nexcept ImportError:  # pallasify: guarded (CUDA extension not built; tpu tensors use Pallas)\n    _C = None\n"},
		{"dotted import", "import pkg._C\n", true,
			"try:\n    import pkg._C\nexcept ImportError:  # pallasify: guarded (CUDA extension not built; tpu tensors use Pallas)\n    pass\n"},
		{"functions from _C", "import torch\nfrom ._C import nms, roi_align as _ra  # ops\n", true,
			"import torch\n\ntry:\n    from ._C import nms, roi_align as _ra  # ops\nexcept ImportError:  # pallasify: guarded (CUDA extension not built; tpu tensors use Pallas)\n    _ra = nms = None\n"},
		{"loader registry", "from ..utils import ext_loader\n\next_module = ext_loader.load_ext(\n    \"_ext\", [\"a\", \"b\"])\n", true,
			"from ..utils import ext_loader\n\ntry:\n    ext_module = ext_loader.load_ext(\n        \"_ext\", [\"a\", \"b\"])\nexcept ImportError:  # pallasify: guarded (CUDA extension not built; tpu tensors use Pallas)\n    ext_module = None\n"},
		{"nothing to guard", "import torch\nx = 1\n", true, "import torch\nx = 1\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, lazied := guardExtension(c.in, c.lazy)
			if got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
			if lazied != strings.Contains(c.want, "lazy_extension") {
				t.Errorf("lazied = %v", lazied)
			}
			if again, _ := guardExtension(got, c.lazy); again != got {
				t.Errorf("not idempotent:\n%s", again)
			}
		})
	}
}

func TestAddImport(t *testing.T) {
	files := map[string]bool{"pkg/__init__.py": true}
	read := func(p string) ([]byte, bool) { return nil, files[p] }
	cases := []struct{ name, file, in, want string }{
		{"package", "pkg/ops.py", "\"\"\"doc\nimport x\n\"\"\"\nimport torch\n\n\ndef f():\n    import os\n",
			"\"\"\"doc\nimport x\n\"\"\"\nimport torch\nfrom . import _pallas_ops  # pallasify: proven Pallas kernel for tpu tensors\n\n\ndef f():\n    import os\n"},
		{"script", "run.py", "x = 1\n", "import _pallas_ops  # pallasify: proven Pallas kernel for tpu tensors\n\nx = 1\n"},
	}
	for _, c := range cases {
		got := addImport(c.in, "_pallas_ops", c.file, read)
		if got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
		}
		if again := addImport(got, "_pallas_ops", c.file, read); again != got {
			t.Errorf("%s: import added twice", c.name)
		}
	}
}

func TestFindHost(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "e2e", "torchlib_act", "torchlib_act", "csrc", "softsign.cu"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := findHost(string(src), &kernels.Kernel{Name: "softsign_bwd_kernel", Path: "softsign.cu"})
	if err != nil {
		t.Fatal(err)
	}
	if h.name != "scaled_softsign_backward" || len(h.params) != 3 || !h.params[0].tensor || h.params[2].tensor {
		t.Fatalf("host %+v", h)
	}
	want := []hostArg{{tensor: "grad", param: 0}, {tensor: "x", param: 1}, {tensor: "dx", param: -1, like: "x"}, {param: 2}, {param: -1}}
	for i, a := range h.args {
		if a.tensor != want[i].tensor || a.param != want[i].param || a.like != want[i].like {
			t.Errorf("arg %d = %+v, want %+v", i, a, want[i])
		}
	}
	if len(h.returns) != 1 || h.returns[0] != "dx" {
		t.Errorf("returns %v", h.returns)
	}
	if name, ns := pyName(string(src), h.name); name != "scaled_softsign_backward" || ns != "torchlib_act" {
		t.Errorf("pyName = %s, %s", name, ns)
	}
	if !isBackwardOf("scaled_softsign_forward", "scaled_softsign_backward") || isBackwardOf("a_fwd", "b_bwd") {
		t.Error("isBackwardOf")
	}
	if _, err := findHost("__global__ void k(float* x) {}", &kernels.Kernel{Name: "k"}); err == nil {
		t.Error("a kernel without a launch has no host")
	}
}

// TestRefusals: constructs the translator cannot express exactly are
// refused with a code, never guessed.
func TestRefusals(t *testing.T) {
	host := "\ntorch::Tensor f(torch::Tensor x) {\n  auto y = torch::empty_like(x);\n  const int n = x.numel();\n  k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n  return y;\n}\n"
	cases := []struct{ name, body, code, msg string }{
		{"roundf", "y[i] = roundf(x[i]);", CodeUnsupported, "call to roundf"},
		{"gather from an output", "y[i] = x[i]; y[i] = y[(int)x[i]];", CodeDataIndex, "data-dependent index and the kernel writes it"},
		{"conditional store", "if (x[i] > 0.0f) y[i] = 1.0f;", CodeUnsupported, "data-dependent condition and otherwise keeps its prior content"},
		{"conditional store after an unconditional one", "y[i] = 2.0f; if (x[i] > 0.0f) y[i] = 1.0f; if (x[i] < 0.0f) y[i] = 3.0f;", "", ""},
		{"pointer moved in a branch", "if (i > 2) y += 1; y[i] = x[i];", CodeUnsupported, "pointer y is moved inside a branch"},
		{"loop with a data-dependent trip count", "float s = 0.0f; for (int j = 0; j < (int)x[i]; ++j) s += x[j]; y[i] = s;", CodeLoop, "trip count"},
		{"loop with a uniform runtime trip count", "float s = 0.0f; for (int j = 0; j < n; ++j) s += x[j]; y[i] = s;", "", ""},
		{"float modulo", "y[i] = x[i] % 2.0f;", CodeUnsupported, ""},
		{"read after write elsewhere", "y[i] = x[i]; y[i] = y[i ^ 1] * 2.0f;", CodeUnsupported, "read after this thread wrote it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := "#include <torch/extension.h>\n__global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n    " + c.body + "\n  }\n}\n" + host
			if err := os.WriteFile(filepath.Join(dir, "k.cu"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			inv, _ := kernels.Discover(context.Background(), dir, []string{"k.cu"})
			if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
				t.Fatalf("discovery: %+v", inv.Kernels)
			}
			k := inv.Kernels[0]
			k.Class = kernels.ClassElementwise
			k.Spec.Class = kernels.ClassElementwise
			_, err := Draft(context.Background(), k, Options{})
			if c.code == "" {
				// the contrast: the element is written on every path
				if err != nil {
					t.Errorf("got %v, want a draft", err)
				}
				return
			}
			r, ok := AsRefusal(err)
			if !ok || r.Code != c.code || !strings.Contains(r.Message, c.msg) {
				t.Errorf("got %v, want %s containing %q", err, c.code, c.msg)
			}
		})
	}
}

// TestWireLoadAndPybind wires a kernel built with cpp_extension.load from a
// .cu file exposed through PYBIND11, and one imported as a compiled _C
// module: module, ops registrations, dispatch and guard.
func TestWireLoadAndPybind(t *testing.T) {
	cu := `#include <torch/extension.h>
__global__ void twice_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
torch::Tensor twice(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int n = x.numel();
  twice_kernel<<<(n + 127) / 128, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice", &twice, "2x"); }
`
	for _, c := range []struct {
		name, py, wantCall, wantGuard string
	}{
		{"load", "import torch\nfrom torch.utils.cpp_extension import load\n\next = load(name=\"tw\", sources=[\"k.cu\"])\n\n\ndef twice(x):\n    return ext.twice(x)\n",
			"    return _pallas_ops.twice(x) if x.device.type == \"tpu\" else ext.twice(x)\n", "# pallasify: guarded (built when the CUDA path first uses it)\next = _pallas_ops.lazy_extension(lambda: load(name=\"tw\", sources=[\"k.cu\"]))\n"},
		// a handle on the extension's function: reading it must not build the extension
		{"load, function handle", "import torch\nfrom torch.utils.cpp_extension import load\n\next = load(name=\"tw\", sources=[\"k.cu\"])\n" +
			"fn = ext.twice\n\n\ndef twice(x):\n    return fn(x)\n",
			"    return _pallas_ops.twice(x) if x.device.type == \"tpu\" else fn(x)\n", "lambda: load("},
		// the function imported from the extension under a name of its own
		{"function from _C", "import torch\nfrom ._C import twice as _twice\n\n\ndef twice(x):\n    return _twice(x)\n",
			"    return _pallas_ops.twice(x) if x.device.type == \"tpu\" else _twice(x)\n", "    _twice = None\n"},
		// mmcv's registry: the extension bound by a loader under a name of its own
		{"load_ext registry", "import torch\nfrom ..utils import ext_loader\n\next_module = ext_loader.load_ext(\"_ext\", [\"twice\"])\n\n\n" +
			"def twice(x):\n    return ext_module.twice(x)\n",
			"    return _pallas_ops.twice(x) if x.device.type == \"tpu\" else ext_module.twice(x)\n", "    ext_module = None\n"},
		// inside an expression the conditional keeps its parentheses
		{"compiled _C", "import torch\nfrom . import _C\n\n\ndef twice(x):\n    return 2 * _C.twice(x)\n",
			`return 2 * (_pallas_ops.twice(x) if x.device.type == "tpu" else _C.twice(x))`, "except ImportError:"},
		// an argument with effects is evaluated once (the dispatch helper), its
		// call wrapped as ruff format wraps it where the line would pass 100
		{"dispatch helper, wrapped", "import torch\nfrom . import _C\n\n\ndef twice(layer, x):\n    return _C.twice(torch.nn.functional.relu(layer(x)))\n",
			"    return _pallas_ops.twice_dispatch(\n        torch.nn.functional.relu(layer(x)), lambda: _C.twice(torch.nn.functional.relu(layer(x)))\n    )\n",
			"except ImportError:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"pkg/__init__.py": "", "pkg/k.cu": cu, "pkg/ops.py": c.py}
			for p, s := range files {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
				if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			inv, _ := kernels.Discover(ctx, dir, []string{"pkg/__init__.py", "pkg/k.cu", "pkg/ops.py"})
			if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
				t.Fatalf("discovery: %+v", inv.Kernels)
			}
			k := inv.Kernels[0]
			res, err := Draft(ctx, k, Options{})
			if err != nil {
				t.Fatal(err)
			}
			read := func(p string) ([]byte, bool) {
				s, ok := files[p]
				return []byte(s), ok
			}
			wk := WireKernel{Kernel: k, Module: res.Module, Drafter: DrafterRules, Verdict: "PROVEN (test)",
				Cases: []ValidatedCase{{Sizes: map[string]int64{"n": 40}}, {Sizes: map[string]int64{"n": 257}}},
				TPU:   map[string]ChipCompile{"v5e": {Compiled: true, Sizes: map[string]int64{"n": 40}, BytesAccessed: 4096, RooflineS: 5e-9}}}
			out, wired, probs := Wire(ctx, []WireKernel{wk}, read, []string{"pkg/__init__.py", "pkg/ops.py"}, nil)
			if len(probs) != 0 || len(wired) != 1 || wired[0].Sites != 1 {
				t.Fatalf("wired %+v, problems %+v", wired, probs)
			}
			got := map[string]string{}
			for _, f := range out {
				got[f.Path] = string(f.Content)
			}
			ops := got["pkg/ops.py"]
			for _, w := range []string{c.wantCall, c.wantGuard, "from . import _pallas_ops"} {
				if !strings.Contains(ops, w) {
					t.Errorf("ops.py lacks %q:\n%s", w, ops)
				}
			}
			mod, opsMod := got["pkg/_pallas_twice_kernel.py"], got["pkg/_pallas_ops.py"]
			for _, w := range []string{
				"def twice_jax(x: jax.Array, *, interpret: bool = False) -> jax.Array:",
				`    "function": "twice_jax",` + "\n" + `    "tensors": ["x"],` + "\n" + `    "static": [],`,
				// the case the compile gate measured, not the largest
				`    "example": {"x": {"shape": [40], "dtype": "float32"}},`,
				`        "v5e": {"compiled": True, "bytes_accessed": 4096.0, "roofline_s": 5e-09},`,
			} {
				if !strings.Contains(mod, w) {
					t.Errorf("kernel module lacks %q:\n%s", w, mod)
				}
			}
			if !strings.Contains(opsMod, `return jax_op("pallasify_pkg::twice", kernel.twice_jax)`) ||
				!strings.Contains(opsMod, "    from . import _pallas_twice_kernel as kernel\n") ||
				strings.Contains(opsMod, "def twice_dispatch(") != strings.Contains(ops, "twice_dispatch(") {
				t.Errorf("ops module:\n%s", opsMod)
			}
			if strings.Contains(ops, "lazy_extension(") != strings.Contains(opsMod, "def lazy_extension(build):") {
				t.Errorf("lazy_extension used by ops.py and defined by _pallas_ops.py disagree:\n%s", opsMod)
			}
			// nothing but functools at module level: the package imports without jax or torch_tpu
			for _, l := range strings.Split(opsMod, "\n") {
				if (strings.HasPrefix(l, "import ") || strings.HasPrefix(l, "from ")) && l != "import functools" {
					t.Errorf("ops module imports at module level: %s", l)
				}
			}
			// a second run over the migrated tree changes nothing
			py := []string{"pkg/__init__.py", "pkg/ops.py"}
			for p, c := range got {
				files[p] = c
				if strings.HasPrefix(p, "pkg/_pallas_") {
					py = append(py, p)
				}
			}
			again, wired2, probs2 := Wire(ctx, []WireKernel{wk}, read, py, nil)
			if len(again) != 0 || len(probs2) != 0 || len(wired2) != 1 || wired2[0].Module != "pkg/_pallas_twice_kernel.py" {
				t.Errorf("second run: %d files, wired %+v, problems %+v", len(again), wired2, probs2)
			}
		})
	}
}

// TestKeepApart: two kernels of the same name (and the same Python entry)
// in one directory get their own module and entry, named by kernel id; a
// kernel alone keeps its plain names.
func TestKeepApart(t *testing.T) {
	mk := func(id, dir string) *plan {
		return &plan{wk: WireKernel{Kernel: &kernels.Kernel{ID: id, Name: "scale_kernel"}}, dir: dir,
			modName: "_pallas_scale_kernel", entry: "scale"}
	}
	a, b, c := mk("k-aa", "pkg"), mk("k-bb", "pkg"), mk("k-cc", "other")
	keepApart([]*plan{a, b, c})
	if a.modName != "_pallas_scale_kernel_k_aa" || b.modName != "_pallas_scale_kernel_k_bb" || a.entry != "scale_k_aa" || b.entry != "scale_k_bb" {
		t.Errorf("same directory: %s %s, %s %s", a.modName, a.entry, b.modName, b.entry)
	}
	if c.modName != "_pallas_scale_kernel" || c.entry != "scale" {
		t.Errorf("alone in its directory: %s %s", c.modName, c.entry)
	}
}

// TestWireHeaderStatics: a kernel with a static scalar gets one op for every
// value (the scalar is an annotated parameter of the JAX function), and the
// header quotes the validated case's value of it; a chip that did not compile
// is recorded with the compiler's message.
func TestWireHeaderStatics(t *testing.T) {
	cu := `#include <torch/extension.h>
__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
torch::Tensor scale(torch::Tensor x, double a) {
  auto y = torch::empty_like(x);
  const int n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<float>(a), n);
  return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale, "a*x"); }
`
	py := "import torch\nfrom . import _C\n\n\ndef scale(x, a):\n    return _C.scale(x, a)\n"
	dir := t.TempDir()
	files := map[string]string{"pkg/__init__.py": "", "pkg/k.cu": cu, "pkg/ops.py": py}
	for p, s := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	inv, _ := kernels.Discover(ctx, dir, []string{"pkg/__init__.py", "pkg/k.cu", "pkg/ops.py"})
	if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
		t.Fatalf("discovery: %+v", inv.Kernels)
	}
	k := inv.Kernels[0]
	res, err := Draft(ctx, k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) ([]byte, bool) {
		s, ok := files[p]
		return []byte(s), ok
	}
	wk := WireKernel{Kernel: k, Module: res.Module, Drafter: DrafterRules, Verdict: "PROVEN (test)",
		Cases: []ValidatedCase{{Sizes: map[string]int64{"n": 2039}, Scalars: map[string]float64{"a": 1.5006216764450073, "n": 2039}}},
		TPU:   map[string]ChipCompile{"v5e": {Compiled: false, Error: "block shape (3, 100)"}}}
	out, wired, probs := Wire(ctx, []WireKernel{wk}, read, []string{"pkg/__init__.py", "pkg/ops.py"}, nil)
	if len(probs) != 0 || len(wired) != 1 {
		t.Fatalf("wired %+v, problems %+v", wired, probs)
	}
	got := map[string]string{}
	for _, f := range out {
		got[f.Path] = string(f.Content)
	}
	mod, opsMod := got["pkg/_pallas_scale_kernel.py"], got["pkg/_pallas_ops.py"]
	for _, w := range []string{
		"def scale_jax(x: jax.Array, a: float, *, interpret: bool = False) -> jax.Array:",
		`    "static": ["a"],`,
		`    "example": {"x": {"shape": [2039], "dtype": "float32"}, "a": 1.5006216764450073},`,
		`        "v5e": {"compiled": False, "error": "block shape (3, 100)"},`,
		"Did not compile for TPU (deviceless AOT); failed: v5e",
	} {
		if !strings.Contains(mod, w) {
			t.Errorf("kernel module lacks %q:\n%s", w, mod)
		}
	}
	if !strings.Contains(opsMod, "def scale(x, a):\n") || !strings.Contains(opsMod, "    return scale_op()(x, a)\n") ||
		strings.Contains(opsMod, "_key(") {
		t.Errorf("one op for every value of a:\n%s", opsMod)
	}
}

// TestHostCallChain: KernelBench's GELU launches in my_gelu_out, which takes
// the output as a parameter; my_gelu allocates it and calls my_gelu_out, so
// my_gelu is the host function wiring maps (output shaped like inp), also
// when it returns the inner call's result.
func TestHostCallChain(t *testing.T) {
	kernel := "__global__ void my_gelu_kernel(float* out, float* inp, int n) {\n" +
		"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  out[i] = 0.5f * inp[i];\n}\n"
	inner := "torch::Tensor my_gelu_out(torch::Tensor output, const torch::Tensor& inp) {\n" +
		"  int n = inp.numel();\n  int threads = 256;\n" +
		"  my_gelu_kernel<<<cdiv(n, threads), threads>>>(\n      output.data_ptr<float>(), inp.data_ptr<float>(), n);\n" +
		"  return output;\n}\n"
	for _, c := range []struct{ name, outer string }{
		{"calls, then returns the output", "torch::Tensor my_gelu(const torch::Tensor& inp) {\n" +
			"  auto output = torch::empty_like(inp);\n  my_gelu_out(output, inp);\n  return output;\n}\n"},
		{"returns the call", "torch::Tensor my_gelu(const torch::Tensor& x) {\n" +
			"  auto xc = x.contiguous();\n  auto output = torch::empty_like(xc);\n  return my_gelu_out(output, xc);\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := kernel + inner + c.outer
			k := &kernels.Kernel{Name: "my_gelu_kernel", Path: "gelu.py", Spec: &kernels.Spec{Params: []kernels.Param{
				{Name: "out", Kind: "pointer", Role: "output"}, {Name: "inp", Kind: "pointer", Role: "input"},
				{Name: "n", Kind: "scalar", Role: "size"}}}}
			h, err := findHost(src, k)
			if err != nil {
				t.Fatal(err)
			}
			if h.name != "my_gelu_out" || !outputsPassedIn(k, h) {
				t.Fatalf("launching host %s, output passed in: %v", h.name, outputsPassedIn(k, h))
			}
			c := h.callerOf(src)
			if c == nil {
				t.Fatal("no caller found")
			}
			in := c.params[0].name
			want := []hostArg{{tensor: "output", param: -1, like: in}, {tensor: in, param: 0}, {param: -1}}
			if c.name != "my_gelu" || len(c.params) != 1 || len(c.args) != len(want) {
				t.Fatalf("caller %+v", c)
			}
			for i, a := range c.args {
				if a.tensor != want[i].tensor || a.param != want[i].param || a.like != want[i].like {
					t.Errorf("arg %d = %+v, want %+v", i, a, want[i])
				}
			}
			if len(c.returns) != 1 || c.returns[0] != "output" || outputsPassedIn(k, c) {
				t.Errorf("returns %v", c.returns)
			}
			if c.callerOf(src) != nil {
				t.Error("nothing calls my_gelu")
			}
		})
	}
}

// TestPyNameAcrossFiles: an op's namespace comes from the block holding its
// m.impl, so a TORCH_LIBRARY_IMPL whose TORCH_LIBRARY is in another file
// still names it (TORCH_FN(...) registrations too).
func TestPyNameAcrossFiles(t *testing.T) {
	cases := []struct{ name, src, name2, ns string }{
		{"impl only", "TORCH_LIBRARY_IMPL(myops, CUDA, m) {\n  m.impl(\"leaky\", &leaky_cuda);\n}\n", "leaky", "myops"},
		{"TORCH_FN", "TORCH_LIBRARY_IMPL(myops, CUDA, m) {\n  m.impl(\"leaky\", TORCH_FN(leaky_cuda));\n}\n", "leaky", "myops"},
		{"two blocks", "TORCH_LIBRARY(a, m) { m.def(\"x(Tensor t) -> Tensor\"); }\n" +
			"TORCH_LIBRARY_IMPL(b, CUDA, m) { m.impl(\"leaky\", &leaky_cuda); }\n", "leaky", "b"},
		{"pybind", "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"leaky\", &leaky_cuda); }\n", "leaky", ""},
		// vLLM's shape: the block's variable is ops, the impl names its dispatch key
		{"dispatch key", "TORCH_LIBRARY_EXPAND(x, y)\nTORCH_LIBRARY(vops, ops) {\n  ops.def(\"leaky(Tensor x, float s) -> Tensor\");\n" +
			"  ops.impl(\"leaky\", torch::kCUDA, &leaky_cuda);\n}\n", "leaky", "vops"},
		{"def with the function", "TORCH_LIBRARY(myops, m) {\n  m.def(\"leaky(Tensor x, float s) -> Tensor\", &leaky_cuda);\n}\n", "leaky", "myops"},
		{"pybind after a library block", "TORCH_LIBRARY(myops, m) { m.def(\"other(Tensor x) -> Tensor\"); }\n" +
			"PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"leaky\", &leaky_cuda, \"doc\"); }\n", "leaky", ""},
		{"nothing", "int x;\n", "leaky_cuda", ""},
	}
	for _, c := range cases {
		if name, ns := pyName(c.src, "leaky_cuda"); name != c.name2 || ns != c.ns {
			t.Errorf("%s: pyName = %q, %q; want %q, %q", c.name, name, ns, c.name2, c.ns)
		}
	}
}

// TestGuardRegistrations: registrations for the extension's namespaces go
// through _pallas_ops.if_op_defined (decorator and call forms); other
// namespaces and custom_op (which defines its op) stay; a second pass
// changes nothing.
func TestGuardRegistrations(t *testing.T) {
	in := "import torch\n\n\n@torch.library.register_fake(\"myops::leaky\")\ndef _(x, slope):\n    return torch.empty_like(x)\n\n\n" +
		"torch.library.register_fake(\n    \"myops::softplus\", lambda x: torch.empty_like(x)\n)\n" +
		"torch.library.impl('myops::leaky', \"cpu\", lambda x, s: x)\n" +
		"torch.library.register_fake(\"other::op\")(lambda x: x)\n" +
		"@torch.library.custom_op(\"myops::mine\", mutates_args=())\ndef mine(x: torch.Tensor) -> torch.Tensor:\n    return x\n"
	want := "import torch\n\n\n@_pallas_ops.if_op_defined(torch.library.register_fake, \"myops::leaky\")\ndef _(x, slope):\n    return torch.empty_like(x)\n\n\n" +
		"_pallas_ops.if_op_defined(\n    torch.library.register_fake, \"myops::softplus\", lambda x: torch.empty_like(x)\n)\n" +
		"_pallas_ops.if_op_defined(torch.library.impl, 'myops::leaky', \"cpu\", lambda x, s: x)\n" +
		"torch.library.register_fake(\"other::op\")(lambda x: x)\n" +
		"@torch.library.custom_op(\"myops::mine\", mutates_args=())\ndef mine(x: torch.Tensor) -> torch.Tensor:\n    return x\n"
	got, guarded := guardRegistrations(in, []string{"myops"})
	if !guarded || got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if again, g := guardRegistrations(got, []string{"myops"}); g || again != got {
		t.Errorf("second pass changed:\n%s", again)
	}
	if _, g := guardRegistrations(in, nil); g {
		t.Error("guarded without a namespace")
	}
}

// TestWireThroughRegistry: mmcv's layout. The kernel is defined in a header
// and launched by a launcher in a .cu that includes it; a CUDA implementation
// calling the launcher is recorded in a device registry; the op dispatches
// through the registry and is bound with py::arg names; a forwarder that no
// binding names (mmcv's DIOPI variant) comes first and is passed over. The
// Python call passes the output the caller allocated, with keyword
// arguments: it becomes an if statement whose tpu branch writes the output in
// place, and the sizes come from the host's own code (output.numel(),
// input.size(1)).
func TestWireThroughRegistry(t *testing.T) {
	files := map[string]string{
		"pkg/__init__.py": "",
		"pkg/utils/ext_loader.py": "import importlib\n\n\ndef load_ext(name, funcs):\n" +
			"    return importlib.import_module(\"pkg.\" + name)\n",
		"pkg/ops/loss.py": "import torch\n\nfrom ..utils import ext_loader\n\n" +
			"ext_module = ext_loader.load_ext(\"_ext\", [\"loss_forward\"])\n\n\n" +
			"def loss(input, target, gamma=2.0):\n    output = input.new_zeros(input.size())\n" +
			"    ext_module.loss_forward(\n        input, target, output, gamma=float(gamma))\n" +
			"    ext_module.loss_forward(input, target, output, scale=gamma)  # no such keyword: left alone\n" +
			"    return output\n",
		"pkg/ops/csrc/common/cuda/loss_kernel.cuh": "__global__ void loss_kernel(const int nthreads, const float* input, " +
			"const int64_t* target, float* output, const float gamma, const int num_classes) {}\n",
		"pkg/ops/csrc/pytorch/cuda/loss_cuda.cu": "#include \"loss_kernel.cuh\"\n" +
			"void LossForwardLauncher(Tensor input, Tensor target, Tensor output, const float gamma) {\n" +
			"  int output_size = output.numel();\n  int num_classes = input.size(1);\n" +
			"  loss_kernel<<<GET_BLOCKS(output_size), 512>>>(output_size, input.data_ptr<float>(),\n" +
			"      target.data_ptr<int64_t>(), output.data_ptr<float>(), gamma, num_classes);\n}\n",
		"pkg/ops/csrc/pytorch/cuda/cudabind.cpp": "void LossForwardLauncher(Tensor input, Tensor target, Tensor output, const float gamma);\n" +
			"void loss_forward_cuda(Tensor input, Tensor target, Tensor output, float gamma) {\n" +
			"  LossForwardLauncher(input, target, output, gamma);\n}\n" +
			"void loss_forward_impl(Tensor input, Tensor target, Tensor output, float gamma);\n" +
			"REGISTER_DEVICE_IMPL(loss_forward_impl, CUDA, loss_forward_cuda);\n",
		"pkg/ops/csrc/pytorch/loss.cpp": "void loss_forward_impl(Tensor input, Tensor target, Tensor output, float gamma) {\n" +
			"  DISPATCH_DEVICE_IMPL(loss_forward_impl, input, target, output, gamma);\n}\n" +
			"void loss_forward_diopi(Tensor input, Tensor target, Tensor output, float gamma) {\n" +
			"  loss_forward_impl(input, target, output, gamma);\n}\n" +
			"void loss_forward(Tensor input, Tensor target, Tensor output, float gamma) {\n" +
			"  loss_forward_impl(input, target, output, gamma);\n}\n",
		"pkg/ops/csrc/pytorch/pybind.cpp": "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" +
			"  m.def(\"loss_forward\", &loss_forward, \"loss\", py::arg(\"input\"), py::arg(\"target\"),\n" +
			"        py::arg(\"output\"), py::arg(\"gamma\"));\n}\n",
	}
	read := func(p string) ([]byte, bool) {
		s, ok := files[p]
		return []byte(s), ok
	}
	var py, srcs []string
	for p := range files {
		if strings.HasSuffix(p, ".py") {
			py = append(py, p)
		} else {
			srcs = append(srcs, p)
		}
	}
	k := &kernels.Kernel{ID: "k-0123456789", Name: "loss_kernel", Path: "pkg/ops/csrc/common/cuda/loss_kernel.cuh",
		Spec: &kernels.Spec{Symbols: []string{"rows", "classes"}, Params: []kernels.Param{
			{Name: "nthreads", Kind: "scalar", Role: "size", Expr: "rows * classes"},
			{Name: "input", Kind: "pointer", Role: "input", DType: "float32", Shape: []string{"rows", "classes"}},
			{Name: "target", Kind: "pointer", Role: "input", DType: "int64", Shape: []string{"rows"}},
			{Name: "output", Kind: "pointer", Role: "output", DType: "float32", Shape: []string{"rows", "classes"}},
			{Name: "gamma", Kind: "scalar", Role: "scalar", DType: "float32"},
			// the capture related it to target's extent (a coincidence of the test's sizes)
			{Name: "num_classes", Kind: "scalar", Role: "scalar", DType: "int32"}}}}
	wk := WireKernel{Kernel: k, Module: "import functools\n\n\ndef run(args, *, interpret):\n    return {}\n",
		Drafter: DrafterRules, Verdict: "PROVEN (test)", Cases: []ValidatedCase{{Sizes: map[string]int64{"rows": 3, "classes": 5}, Scalars: map[string]float64{"gamma": 2}}}}
	ctx := context.Background()
	out, wired, probs := Wire(ctx, []WireKernel{wk}, read, py, srcs)
	if len(probs) != 0 || len(wired) != 1 || wired[0].Sites != 1 {
		t.Fatalf("wired %+v, problems %+v", wired, probs)
	}
	got := map[string]string{}
	for _, f := range out {
		got[f.Path] = string(f.Content)
	}
	for path, wants := range map[string][]string{
		"pkg/ops/loss.py": {
			"from . import _pallas_ops  # pallasify",
			"    if input.device.type == \"tpu\":\n        _pallas_ops.loss_forward(input, target, output, float(gamma))\n" +
				"    else:\n        ext_module.loss_forward(\n            input, target, output, gamma=float(gamma))\n",
			"    ext_module.loss_forward(input, target, output, scale=gamma)  # no such keyword: left alone\n",
			"except ImportError:  # pallasify: guarded",
		},
		"pkg/ops/_pallas_ops.py": {
			"def loss_forward(input, target, output, gamma):",
			"    output.copy_(loss_forward_op()(input, target, output, gamma))\n",
			"    from . import _pallas_loss_kernel as kernel\n",
		},
		"pkg/ops/_pallas_loss_kernel.py": {
			`"nthreads": (s_rows * s_classes)`,
			`"num_classes": input.shape[1]`,
			`return res["output"].reshape(output.shape)`,
			`"output": {"shape": [3, 5], "dtype": "float32"}`,
		},
	} {
		for _, w := range wants {
			if !strings.Contains(got[path], w) {
				t.Errorf("%s lacks %q:\n%s", path, w, got[path])
			}
		}
	}
	// the launcher alone, without the sources around it, is not bound
	if _, _, probs := Wire(ctx, []WireKernel{wk}, read, py, []string{"pkg/ops/csrc/pytorch/cuda/loss_cuda.cu"}); len(probs) != 1 {
		t.Errorf("wired without its binding: %+v", probs)
	}
}

// TestLaunchConstruct: a launch under a host condition or in a host loop is
// found (psamask's launcher picks its kernel by psa_type, without braces);
// constructs closed before the launch are not.
func TestLaunchConstruct(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"\n  int n = x.numel();\n  ", ""},
		{"\n  if (n == 0) return out;\n  for (int i = 0; i < 3; i++) { s += i; }\n  AT_DISPATCH(x, \"k\", [&] {\n    ", ""},
		{"\n  if (psa_type == 0)\n    AT_DISPATCH_FLOATING_TYPES(\n        input.scalar_type(), \"c\", [&] {\n          ", "if"},
		{"\n  if (psa_type == 0)\n    a<<<1, 1>>>(x);\n  else\n    AT_DISPATCH(x, \"d\", [&] {\n      ", "else"},
		{"\n  if (aligned) {\n    k<<<1, 1>>>(x);\n  } else {\n    ", "else"},
		{"\n  for (int s = 0; s < steps; ++s) {\n    ", "for"},
		{"\n  // if (x) {\n  const char* m = \"if (\";\n  ", ""},
	} {
		if got := launchConstruct(c.prefix); got != c.want {
			t.Errorf("launchConstruct(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
}

// TestHostExpr: integers the host computes from its tensors' sizes and its
// integer parameters become JAX-side expressions (tin_shift's group_channel,
// psamask's nthreads, KernelBench's (h - k) / stride + 1); a C division is
// // over sizes and literals, where truncating and flooring agree, and
// truncates toward zero otherwise; a local assigned twice has no one value;
// anything else is not an expression.
func TestHostExpr(t *testing.T) {
	src := "void launch(Tensor input, Tensor shift, const int num_, const int h, float scale) {\n" +
		"  auto x = input.contiguous();\n  int channels = x.size(2);\n  int group_size = shift.size(1);\n" +
		"  int group_channel = channels / group_size;\n  int nthreads = num_ * h * input.numel();\n" +
		"  int signed_div = num_ / group_size;\n  int other = foo(h);\n  int size = input.numel();\n  k<<<1, 1>>>(size);\n" +
		"  size = shift.numel();\n}\n"
	h, _, err := parseHostFn(src, reFnHead.FindStringSubmatchIndex(src))
	if err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{
		"group_channel":               "(input.shape[2] // shift.shape[1])",
		"nthreads":                    "(num_ * h * input.size)",
		"static_cast<int>(x.numel())": "input.size",
		"h + 1":                       "h + 1",
		"signed_div":                  "(abs(num_) // abs(shift.shape[1]) * (1 if (num_ < 0) == (shift.shape[1] < 0) else -1))",
		"(x.size(2) - h) / 2 + 1":     "(abs(input.shape[2] - h) // abs(2) * (1 if (input.shape[2] - h < 0) == (2 < 0) else -1)) + 1",
		"h * (2 + x.size(0)) / 3":     "(abs(h * (2 + input.shape[0])) // abs(3) * (1 if (h * (2 + input.shape[0]) < 0) == (3 < 0) else -1))",
		"h +":                         "",
		"size":                        "", // assigned twice: no one value
		"other":                       "",
		"scale":                       "",
	} {
		got := ""
		if e := h.exprOf(arg); e != nil {
			got = e.py()
		}
		if got != want {
			t.Errorf("exprOf(%q) = %q, want %q", arg, got, want)
		}
	}
}

// TestPointerMovedInStrideLoop: a pointer parameter moved inside a
// grid-stride loop is exact only when each thread runs one iteration; a
// constant launch whose threads run several is refused, and a runtime one
// gets run()'s check.
func TestPointerMovedInStrideLoop(t *testing.T) {
	kernel := "#include <torch/extension.h>\n__global__ void k(const float* x, float* y, int n) {\n" +
		"  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 1000; i += blockDim.x * gridDim.x) {\n" +
		"    y += i;\n    y[0] = x[i];\n  }\n}\n"
	for _, c := range []struct{ name, launch, want string }{
		{"several iterations", "k<<<1, 256>>>", "grid.x·block.x = 256 < 1000"},
		{"one iteration", "k<<<4, 256>>>", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			host := "\ntorch::Tensor f(torch::Tensor x) {\n  auto y = torch::empty_like(x);\n  const int n = x.numel();\n  " + c.launch +
				"(x.data_ptr<float>(), y.data_ptr<float>(), n);\n  return y;\n}\n"
			if err := os.WriteFile(filepath.Join(dir, "k.cu"), []byte(kernel+host), 0o644); err != nil {
				t.Fatal(err)
			}
			inv, _ := kernels.Discover(context.Background(), dir, []string{"k.cu"})
			if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
				t.Fatalf("discovery: %+v", inv.Kernels)
			}
			k := inv.Kernels[0]
			k.Class, k.Spec.Class = kernels.ClassElementwise, kernels.ClassElementwise
			res, err := Draft(context.Background(), k, Options{})
			if c.want != "" {
				if r, ok := AsRefusal(err); !ok || r.Code != CodeUnsupported || !strings.Contains(r.Message, c.want) {
					t.Errorf("got %v, want PPL002 containing %q", err, c.want)
				}
				return
			}
			if err != nil || !strings.Contains(res.Module, "grid.x * block.x >= its extent") {
				t.Errorf("want a draft whose run() checks the launch covers the loop: %v", err)
			}
		})
	}
}

// TestProvenOnly: where the spec is narrower than the host's code — a dim
// fixed at its captured size, two dims of one tensor tied to one symbol, a
// host-computed scalar every validated case gave one value — the JAX
// function raises outside it instead of computing something else; a spec
// of symbols alone adds no check.
func TestProvenOnly(t *testing.T) {
	host := &hostFn{name: "op", params: []hostParam{{name: "x", tensor: true}, {name: "out", tensor: true}},
		args: []hostArg{{param: 0, tensor: "x"}, {param: 1, tensor: "out"},
			{param: -1, expr: &hostExpr{toks: []exprTok{{size: &sizeRef{tensor: "x", dim: 1}}}}}}}
	mk := func(shape []string, cases ...map[string]float64) *plan {
		var vc []ValidatedCase
		for _, c := range cases {
			vc = append(vc, ValidatedCase{Scalars: c})
		}
		return &plan{host: host, pyname: "op", wk: WireKernel{Cases: vc, Kernel: &kernels.Kernel{Spec: &kernels.Spec{
			Symbols: []string{"n", "c"}, Params: []kernels.Param{
				{Name: "x", Kind: "pointer", Role: "input", Shape: shape},
				{Name: "out", Kind: "pointer", Role: "output", Shape: shape},
				{Name: "k", Kind: "scalar", Role: "scalar"}}}}}}
	}
	reshaped := map[string]string{"x": "x_k"}
	conds := func(p *plan) []string {
		var out []string
		for _, g := range p.provenOnly(reshaped) {
			out = append(out, g.cond)
		}
		return out
	}
	if got := conds(mk([]string{"n", "c"}, map[string]float64{"k": 3}, map[string]float64{"k": 5})); len(got) != 0 {
		t.Errorf("symbols alone, varied scalar: %v", got)
	}
	want := []string{"x_k.shape[0] != x_k.shape[1]", "x_k.shape[2] != 4", "x.shape[1] != 2"}
	if got := conds(mk([]string{"c", "c", "4"}, map[string]float64{"k": 2}, map[string]float64{"k": 2})); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestWireFloat32Instance: a kernel proven as the float32 instantiation of
// a template its tests launched at float64 (kernels.Float32Instance) takes
// the Pallas path only for tpu tensors that are float32, every tensor it
// reads tested; float64 keeps the original call. The test spelled with the
// module's torch where it imports torch, by the dtype's text where it does
// not; an if statement's condition past 100 columns goes one test a line.
func TestWireFloat32Instance(t *testing.T) {
	cu := `#include <torch/extension.h>
template <typename scalar_t>
__global__ void scale_kernel(const scalar_t* x, const scalar_t* w, scalar_t* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = w[i] * x[i];
}
void scale(torch::Tensor x, torch::Tensor w, torch::Tensor y) {
  const int n = x.numel();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scale", ([&] {
    scale_kernel<scalar_t><<<(n + 127) / 128, 128>>>(x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                                                     y.data_ptr<scalar_t>(), n);
  }));
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale, "w * x"); }
`
	loader := "from ..utils import ext_loader\n\next_module = ext_loader.load_ext(\"_ext\", [\"scale\"])\n\n\n"
	for _, c := range []struct{ name, py, want string }{
		{"expression", "import torch\n" + loader + "def scale(x, w):\n    y = torch.empty_like(x)\n    return ext_module.scale(x, w, y)\n",
			`    return (
        _pallas_ops.scale(x, w, y)
        if x.device.type == "tpu" and x.dtype == torch.float32 and w.dtype == torch.float32
        else ext_module.scale(x, w, y)
    )
`},
		{"no torch name", loader + "def scale(x, w, y):\n    return ext_module.scale(x, w, y)\n",
			`    return (
        _pallas_ops.scale(x, w, y)
        if x.device.type == "tpu"
        and str(x.dtype) == "torch.float32"
        and str(w.dtype) == "torch.float32"
        else ext_module.scale(x, w, y)
    )
`},
		{"statement", "import torch\n" + loader + "def scale(input_features, weights, output):\n" +
			"    ext_module.scale(input_features, weights, output)\n    return output\n",
			`    if (
        input_features.device.type == "tpu"
        and input_features.dtype == torch.float32
        and weights.dtype == torch.float32
    ):
        _pallas_ops.scale(input_features, weights, output)
    else:
        ext_module.scale(input_features, weights, output)
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"pkg/__init__.py": "", "pkg/k.cu": cu, "pkg/ops.py": c.py}
			for p, s := range files {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
				if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			inv, _ := kernels.Discover(ctx, dir, []string{"pkg/__init__.py", "pkg/k.cu", "pkg/ops.py"})
			if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
				t.Fatalf("discovery: %+v", inv.Kernels)
			}
			k := inv.Kernels[0]
			// the spec as the capture stage records launches at double
			k.Spec.TemplateArgs = map[string]string{"scalar_t": "double"}
			for i := range k.Spec.Params {
				if p := &k.Spec.Params[i]; p.DType == "float32" {
					p.DType = "float64"
				}
			}
			if !kernels.Float32Instance(k) {
				t.Fatalf("no float32 instance of %+v", k.Spec)
			}
			res, err := Draft(ctx, k, Options{})
			if err != nil {
				t.Fatal(err)
			}
			read := func(p string) ([]byte, bool) {
				s, ok := files[p]
				return []byte(s), ok
			}
			wk := WireKernel{Kernel: k, Module: res.Module, Drafter: DrafterRules, Verdict: "PROVEN (test)",
				Cases: []ValidatedCase{{Sizes: map[string]int64{"n": 40}}}}
			out, wired, probs := Wire(ctx, []WireKernel{wk}, read, []string{"pkg/__init__.py", "pkg/ops.py"}, nil)
			if len(probs) != 0 || len(wired) != 1 || wired[0].Sites != 1 {
				t.Fatalf("wired %+v, problems %+v", wired, probs)
			}
			got := map[string]string{}
			for _, f := range out {
				got[f.Path] = string(f.Content)
			}
			if !strings.Contains(got["pkg/ops.py"], c.want) {
				t.Errorf("ops.py lacks\n%s\n%s", c.want, got["pkg/ops.py"])
			}
			mod := got["pkg/_pallas_scale_kernel.py"]
			for _, w := range []string{"Validated at float32 (scale_kernel with scalar_t = float) on cases derived from the repository's tests",
				`"x": {"shape": [40], "dtype": "float32"}`} {
				if !strings.Contains(strings.Join(strings.Fields(mod), " "), w) {
					t.Errorf("kernel module lacks %q:\n%s", w, mod)
				}
			}
		})
	}
}

// TestWireHalfSpecialisation: one call launching a template's primary and
// its float16 specialisation (both behind AT_DISPATCH, mmcv's
// bbox_overlaps) is rewritten once: the specialisation, a dtype instance
// proven at float16, takes tpu float16 tensors; the primary every other tpu
// call; any other device the original.
func TestWireHalfSpecialisation(t *testing.T) {
	cuh := `template <typename scalar_t>
__global__ void scale_kernel(const scalar_t* x, const scalar_t* w, scalar_t* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = w[i] * x[i];
}
`
	cu := `#include <torch/extension.h>
#include <cuda_fp16.h>
#include "k.cuh"
template <>
__global__ void scale_kernel<at::Half>(const at::Half* x, const at::Half* w, at::Half* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hmul(w[i], x[i]);
}
void scale(torch::Tensor x, torch::Tensor w, torch::Tensor y) {
  const int n = x.numel();
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "scale", ([&] {
    scale_kernel<scalar_t><<<(n + 127) / 128, 128>>>(x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                                                     y.data_ptr<scalar_t>(), n);
  }));
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale, "w * x"); }
`
	py := "import torch\nfrom ..utils import ext_loader\n\next_module = ext_loader.load_ext(\"_ext\", [\"scale\"])\n\n\n" +
		"def scale(x, w, y):\n    ext_module.scale(x, w, y)\n    return y\n"
	dir := t.TempDir()
	files := map[string]string{"pkg/__init__.py": "", "pkg/k.cuh": cuh, "pkg/k.cu": cu, "pkg/ops.py": py}
	for p, s := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	inv, _ := kernels.Discover(ctx, dir, []string{"pkg/__init__.py", "pkg/k.cu", "pkg/k.cuh", "pkg/ops.py"})
	var primary, half *kernels.Kernel
	for _, k := range inv.Kernels {
		if len(k.Specializes) > 0 {
			half = k
		} else {
			primary = k
		}
	}
	if primary == nil || half == nil || primary.Spec == nil {
		t.Fatalf("discovery: %+v", inv.Kernels)
	}
	// the specialisation's spec as the capture stage derives it from the
	// primary's float32 launches (kernels.HalfInstance)
	spec := *primary.Spec
	spec.Name, spec.TemplateArgs = half.Name, nil
	spec.Params = slices.Clone(primary.Spec.Params)
	for i := range spec.Params {
		if p := &spec.Params[i]; p.DType == "float32" {
			p.DType, p.CType = "float16", strings.ReplaceAll(p.CType, "float", "at::Half")
		}
	}
	spec.LaunchedDType, spec.ValidatedDType = "float32", "float16"
	half.Spec = &spec
	var wks []WireKernel
	for _, k := range []*kernels.Kernel{primary, half} {
		res, err := Draft(ctx, k, Options{})
		if err != nil {
			t.Fatalf("%s: %v", k.ID, err)
		}
		wks = append(wks, WireKernel{Kernel: k, Module: res.Module, Drafter: DrafterRules, Verdict: "PROVEN (test)",
			Cases: []ValidatedCase{{Sizes: map[string]int64{"n": 40}}}})
	}
	read := func(p string) ([]byte, bool) {
		s, ok := files[p]
		return []byte(s), ok
	}
	out, wired, probs := Wire(ctx, wks, read, []string{"pkg/__init__.py", "pkg/ops.py"}, []string{"pkg/k.cu", "pkg/k.cuh"})
	if len(probs) != 0 || len(wired) != 2 || wired[0].Sites != 1 || wired[1].Sites != 1 {
		t.Fatalf("wired %+v, problems %+v", wired, probs)
	}
	got := ""
	for _, f := range out {
		if f.Path == "pkg/ops.py" {
			got = string(f.Content)
		}
	}
	hid, pid := sanitize(half.ID), sanitize(primary.ID)
	want := `    if x.device.type == "tpu" and x.dtype == torch.float16 and w.dtype == torch.float16:
        _pallas_ops.scale_` + hid + `(x, w, y)
    elif x.device.type == "tpu":
        _pallas_ops.scale_` + pid + `(x, w, y)
    else:
        ext_module.scale(x, w, y)
`
	if !strings.Contains(got, want) {
		t.Errorf("ops.py lacks\n%s\n%s", want, got)
	}
}

// TestWireChecksARelationTheCaptureSawByValue: the launcher passes its
// integer parameter scale as the kernel's scale, and the capture, whose
// one launch had scale = 2 = x's batch, named x's batch "scale" (mmcv's
// carafe_naive_forward). The wired op takes scale from the host's
// parameter, not from x, and refuses a call whose batch is not scale
// (batch 1, 4 channels: out.numel() is the proven 16 all the same) rather
// than run the kernel with scale = 1.
func TestWireChecksARelationTheCaptureSawByValue(t *testing.T) {
	k := &kernels.Kernel{ID: "k-0123456788", Name: "up_kernel", Path: "pkg/ops/csrc/common/cuda/up_kernel.cuh",
		Spec: &kernels.Spec{Symbols: []string{"scale", "channels"}, Params: []kernels.Param{
			{Name: "nthreads", Kind: "scalar", Role: "scalar", DType: "int32"},
			{Name: "x", Kind: "pointer", Role: "input", DType: "float32", Shape: []string{"scale", "channels", "2"}},
			{Name: "out", Kind: "pointer", Role: "output", DType: "float32", Shape: []string{"scale", "channels", "4"}},
			// x's batch, by the captured value (scale = 2 = batch)
			{Name: "scale", Kind: "scalar", Role: "size", DType: "int32", Expr: "scale"},
			{Name: "channels", Kind: "scalar", Role: "size", DType: "int32", Expr: "channels"}}}}
	// run echoes the scale it is given as the whole output
	module := "import numpy as np\n\n\ndef run(args, *, interpret):\n" +
		"    return {\"out\": np.full((16,), args[\"scale\"], np.float32)}\n"
	mod := wireUpKernel(t, k, module, "  int channels = out.size(1);\n", "output_size, x.data_ptr<float>(),\n"+
		"      out.data_ptr<float>(), scale, channels",
		ValidatedCase{Sizes: map[string]int64{"scale": 2, "channels": 2}, Scalars: map[string]float64{"nthreads": 16}})
	for _, w := range []string{"    s_scale = scale\n", "    if x_k.shape[0] != s_scale:\n"} {
		if !strings.Contains(mod, w) {
			t.Errorf("_pallas_up_kernel.py lacks %q:\n%s", w, mod)
		}
	}
	got := runWired(t, mod, "print(f(z(2, 2, 2), z(2, 2, 4), 2)[0, 0, 0])\n"+
		"try:\n    r = f(z(1, 4, 2), z(1, 4, 4), 2)\n    print('ran with scale', r[0, 0, 0])\n"+
		"except ValueError as e:\n    print('refused:', e)\n")
	if want := "2.0\nrefused: x: proven for shape[-3] == scale only; got (1, 4, 2)\n"; got != want {
		t.Errorf("the wired function printed %q, want %q", got, want)
	}
}

// TestWireChecksTheHostsDimAndTheCallersOutput (review of 59b455e, finding
// 5): the host reads channels = x.size(1), which the kernel's view of x
// (its last dim after the product of the others) holds only where x has
// rank 2, so a rank-3 x is refused rather than run with channels = its
// last dim (the kernel ran with 4 where the CUDA op takes 3); and out, the
// caller's tensor the op writes into, must have the shape the kernel
// writes at the call's sizes: before, nothing checked it (a (2, 4) out for
// a (2, 3) x failed in the result's reshape, saying nothing of why).
func TestWireChecksTheHostsDimAndTheCallersOutput(t *testing.T) {
	k := &kernels.Kernel{ID: "k-0123456788", Name: "up_kernel", Path: "pkg/ops/csrc/common/cuda/up_kernel.cuh",
		Spec: &kernels.Spec{Symbols: []string{"rows", "channels"}, Params: []kernels.Param{
			{Name: "nthreads", Kind: "scalar", Role: "scalar", DType: "int32"},
			{Name: "x", Kind: "pointer", Role: "input", DType: "float32", Shape: []string{"rows", "channels"}},
			{Name: "out", Kind: "pointer", Role: "output", DType: "float32", Shape: []string{"rows", "channels"}},
			{Name: "scale", Kind: "scalar", Role: "scalar", DType: "int32"},
			{Name: "channels", Kind: "scalar", Role: "size", DType: "int32", Expr: "channels"}}}}
	// run echoes the channels it is given, in the shape it writes
	module := "import numpy as np\n\n\ndef run(args, *, interpret):\n" +
		"    x = args[\"x\"]\n    c = args[\"channels\"]\n" +
		"    return {\"out\": np.full((x.size // c, c), c, np.float32)}\n"
	mod := wireUpKernel(t, k, module, "  int channels = x.size(1);\n", "output_size, x.data_ptr<float>(),\n"+
		"      out.data_ptr<float>(), scale, channels",
		ValidatedCase{Sizes: map[string]int64{"rows": 2, "channels": 3}, Scalars: map[string]float64{"nthreads": 6, "scale": 1}},
		ValidatedCase{Sizes: map[string]int64{"rows": 5, "channels": 7}, Scalars: map[string]float64{"nthreads": 35, "scale": 1}})
	for _, w := range []string{"    s_channels = x.shape[1]\n", "    if x_k.shape[1] != s_channels:\n",
		"    out_k = out.reshape((-1,) + tuple(out.shape[-1:]))\n", "    out_want = (s_rows, s_channels)\n",
		"    if out_k.shape != out_want:\n"} {
		if !strings.Contains(mod, w) {
			t.Errorf("_pallas_up_kernel.py lacks %q:\n%s", w, mod)
		}
	}
	script := "def call(x, out):\n    try:\n        print('ran with channels', f(x, out, 1).reshape(-1)[0])\n" +
		"    except ValueError as e:\n        print('refused:', e)\n" +
		"call(z(2, 3), z(2, 3))\ncall(z(4, 2, 3), z(4, 2, 3))\ncall(z(2, 3, 4), z(2, 3, 4))\ncall(z(2, 3), z(2, 4))\n"
	want := "ran with channels 3.0\n" +
		"refused: x: proven for shape[-1] == x.shape[1] only; got (4, 2, 3)\n" +
		"refused: x: proven for shape[-1] == x.shape[1] only; got (2, 3, 4)\n" +
		"refused: out: proven for shape (rows, channels) == (2, 3) only; got (2, 4)\n"
	if got := runWired(t, mod, script); got != want {
		t.Errorf("the wired function printed\n%s\nwant\n%s", got, want)
	}
}

// wireUpKernel wires kernel k (its draft module, proven at cases) into a
// package of mmcv's layout whose launcher UpForwardLauncher(x, out, scale)
// computes output_size = out.numel() and the locals in locals, and
// launches up_kernel with args; it returns the kernel module it writes.
func wireUpKernel(t *testing.T, k *kernels.Kernel, module, locals, args string, cases ...ValidatedCase) string {
	t.Helper()
	files := map[string]string{
		"pkg/__init__.py": "",
		"pkg/utils/ext_loader.py": "import importlib\n\n\ndef load_ext(name, funcs):\n" +
			"    return importlib.import_module(\"pkg.\" + name)\n",
		"pkg/ops/up.py": "import torch\n\nfrom ..utils import ext_loader\n\n" +
			"ext_module = ext_loader.load_ext(\"_ext\", [\"up_forward\"])\n\n\n" +
			"def up(x, out, scale):\n    ext_module.up_forward(x, out, scale)\n    return out\n",
		"pkg/ops/csrc/common/cuda/up_kernel.cuh": "__global__ void up_kernel(const int nthreads, const float* x, " +
			"float* out, const int scale, const int channels) {}\n",
		"pkg/ops/csrc/pytorch/cuda/up_cuda.cu": "#include \"up_kernel.cuh\"\n" +
			"void UpForwardLauncher(Tensor x, Tensor out, const int scale) {\n" +
			"  int output_size = out.numel();\n" + locals +
			"  up_kernel<<<GET_BLOCKS(output_size), 512>>>(" + args + ");\n}\n",
		"pkg/ops/csrc/pytorch/cuda/cudabind.cpp": "void UpForwardLauncher(Tensor x, Tensor out, const int scale);\n" +
			"void up_forward_cuda(Tensor x, Tensor out, int scale) {\n" +
			"  UpForwardLauncher(x, out, scale);\n}\n" +
			"void up_forward_impl(Tensor x, Tensor out, int scale);\n" +
			"REGISTER_DEVICE_IMPL(up_forward_impl, CUDA, up_forward_cuda);\n",
		"pkg/ops/csrc/pytorch/up.cpp": "void up_forward_impl(Tensor x, Tensor out, int scale) {\n" +
			"  DISPATCH_DEVICE_IMPL(up_forward_impl, x, out, scale);\n}\n" +
			"void up_forward(Tensor x, Tensor out, int scale) {\n" +
			"  up_forward_impl(x, out, scale);\n}\n",
		"pkg/ops/csrc/pytorch/pybind.cpp": "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" +
			"  m.def(\"up_forward\", &up_forward, \"up\", py::arg(\"x\"), py::arg(\"out\"), py::arg(\"scale\"));\n}\n",
	}
	read := func(p string) ([]byte, bool) {
		s, ok := files[p]
		return []byte(s), ok
	}
	var py, srcs []string
	for p := range files {
		if strings.HasSuffix(p, ".py") {
			py = append(py, p)
		} else {
			srcs = append(srcs, p)
		}
	}
	wk := WireKernel{Kernel: k, Module: module, Drafter: DrafterRules, Verdict: "PROVEN (test)", Cases: cases}
	out, wired, probs := Wire(context.Background(), []WireKernel{wk}, read, py, srcs)
	if len(probs) != 0 || len(wired) != 1 {
		t.Fatalf("wired %+v, problems %+v", wired, probs)
	}
	for _, f := range out {
		if f.Path == "pkg/ops/_pallas_up_kernel.py" {
			return string(f.Content)
		}
	}
	t.Fatalf("no pkg/ops/_pallas_up_kernel.py among %d files", len(out))
	return ""
}

// runWired runs script after kernel module mod's up_forward_jax as f, with
// a stand-in jax (the function reads shapes only) and z(*shape) making a
// numpy array of zeros; it returns what the script printed.
func runWired(t *testing.T, mod, script string) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		python, err = p, nil
	}
	if err != nil {
		t.Skip("no python3 to run the wired function")
	}
	head := "import sys, types\nimport numpy as np\nsys.modules['jax'] = types.SimpleNamespace(Array=object)\n" +
		"ns = {}\nexec(sys.stdin.read(), ns)\nf = ns['up_forward_jax']\n" +
		"z = lambda *s: np.zeros(s, np.float32)\n"
	cmd := exec.Command(python, "-c", head+script)
	cmd.Stdin = strings.NewReader(mod)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, got, mod)
	}
	return string(got)
}
