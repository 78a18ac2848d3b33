package kernels

import (
	"context"
	"reflect"
	"testing"
)

// The mmcv layout: kernels in .cuh headers, launchers in pytorch/cuda/*.cu,
// bindings in pytorch/*.cpp with a PYBIND11_MODULE, no setup.py in the tree,
// and a Python loader naming the module.
var pybindRepo = map[string]string{
	"pkg/ops/csrc/common/cuda/scale_kernel.cuh":  "template <typename T>\n__global__ void scale_kernel(const int n, const T* x, T* y) {\n  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = 2 * x[i];\n}\n",
	"pkg/ops/csrc/common/pytorch_cpp_helper.hpp": "#pragma once\n#include <torch/extension.h>\n",
	"pkg/ops/csrc/pytorch/cuda/scale_cuda.cu":    "#include \"scale_kernel.cuh\"\n#include \"pytorch_cpp_helper.hpp\"\nvoid scale_launcher(const at::Tensor x, at::Tensor y) {\n  int n = x.numel();\n  scale_kernel<float><<<(n + 511) / 512, 512>>>(n, x.data_ptr<float>(), y.data_ptr<float>());\n}\n",
	"pkg/ops/csrc/pytorch/cuda/cudabind.cpp":     "#include \"pytorch_cpp_helper.hpp\"\nvoid scale_launcher(const at::Tensor x, at::Tensor y);\n",
	"pkg/ops/csrc/pytorch/scale.cpp":             "#include \"pytorch_cpp_helper.hpp\"\n#ifdef PKG_WITH_CUDA\nvoid scale_forward(at::Tensor x, at::Tensor y) {}\n#endif\n",
	"pkg/ops/csrc/pytorch/pybind.cpp":            "#include \"pytorch_cpp_helper.hpp\"\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n",
	"pkg/utils/ext_loader.py":                    "import importlib\n\n\ndef load_ext(name, funcs):\n    return importlib.import_module('pkg.' + name)\n",
	"pkg/ops/scale.py":                           "from ..utils import ext_loader\next_module = ext_loader.load_ext('_ext', ['scale_forward'])\n",
	"other/lonely.cu":                            "__global__ void lonely(float* x) { x[0] = 1; }\n",
}

func TestFindExtensionsPybindTree(t *testing.T) {
	root := writeRepo(t, pybindRepo)
	files, err := ListFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := Discover(context.Background(), root, files)
	exts := FindExtensions(root, inv, files)
	if len(exts) != 1 {
		t.Fatalf("extensions = %+v", exts)
	}
	e := exts[0]
	if e.Origin != OriginPybindTree || e.Module != "pkg._ext" || e.Tree != "pkg/ops/csrc" {
		t.Errorf("extension %+v", e)
	}
	if want := []string{"pkg/ops/csrc/pytorch/pybind.cpp", "pkg/ops/csrc/pytorch/scale.cpp", "pkg/ops/csrc/pytorch/cuda/cudabind.cpp", "pkg/ops/csrc/pytorch/cuda/scale_cuda.cu"}; !sameSet(e.Sources, want) {
		t.Errorf("sources %v, want %v", e.Sources, want)
	}
	if want := []string{"pkg/ops/csrc/common", "pkg/ops/csrc/common/cuda"}; !reflect.DeepEqual(e.IncludeDirs, want) {
		t.Errorf("include dirs %v", e.IncludeDirs)
	}
	if e.Defines["PKG_WITH_CUDA"] != "1" || !reflect.DeepEqual(e.Wrappers, []string{"pkg/ops/scale.py"}) {
		t.Errorf("defines %v wrappers %v", e.Defines, e.Wrappers)
	}
	owned := map[string]bool{}
	for _, k := range inv.Kernels {
		owned[k.Name] = e.Owns(root, k)
	}
	if !owned["scale_kernel"] || owned["lonely"] {
		t.Errorf("owns %v", owned)
	}
}

func TestFindExtensionsBuildCalls(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"setup.py":          "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\nsetup(ext_modules=[CUDAExtension(name='mylib._C', sources=['csrc/bind.cpp', 'csrc/k.cu'], include_dirs=['csrc/include'])])\n",
		"csrc/bind.cpp":     "#include <torch/extension.h>\n",
		"csrc/k.cu":         "__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 0; }\n",
		"mylib/__init__.py": "from . import _C\n",
		"jit.py":            "from torch.utils.cpp_extension import load, load_inline\nm = load(name='jitmod', sources=['csrc/k.cu'], extra_include_paths=['csrc/include'])\nn = load_inline(name='inl', cpp_sources='void f();', cuda_sources='__global__ void g(float* y) { y[0] = 1; }', functions=['f'])\n",
	})
	files, _ := ListFiles(root)
	inv, _ := Discover(context.Background(), root, files)
	byModule := map[string]*Extension{}
	for _, e := range FindExtensions(root, inv, files) {
		byModule[e.Module] = e
	}
	c := byModule["mylib._C"]
	if c == nil || c.Origin != OriginCUDAExtension || !sameSet(c.Sources, []string{"csrc/bind.cpp", "csrc/k.cu"}) ||
		!reflect.DeepEqual(c.IncludeDirs, []string{"csrc/include"}) || !reflect.DeepEqual(c.Wrappers, []string{"mylib/__init__.py"}) {
		t.Errorf("CUDAExtension %+v", c)
	}
	l := byModule["jitmod"]
	if l == nil || l.Origin != OriginLoad || !reflect.DeepEqual(l.Sources, []string{"csrc/k.cu"}) || !reflect.DeepEqual(l.Wrappers, []string{"jit.py"}) {
		t.Errorf("load %+v", l)
	}
	in := byModule["inl"]
	if in == nil || in.Origin != OriginLoadInline || len(in.CUDA) != 1 || !reflect.DeepEqual(in.Functions, []string{"f"}) || in.CPP[0] != "void f();" {
		t.Errorf("load_inline %+v", in)
	}
	for _, k := range inv.Kernels {
		if k.Name == "g" && !in.Owns(root, k) || k.Name == "k" && (!c.Owns(root, k) || in.Owns(root, k)) {
			t.Errorf("ownership of %s (%s)", k.Name, k.Path)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}
