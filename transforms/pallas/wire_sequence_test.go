package pallas

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// seqTree is an mmcv-shaped tree whose launcher launches two kernels in
// sequence (softmax focal loss backward's shape): k1 writes buff, k2 reads
// it and writes grad_input; output_size is reassigned between them.
func seqTree() map[string]string {
	return map[string]string{
		"pkg/__init__.py":     "",
		"pkg/ops/__init__.py": "",
		"pkg/utils/ext_loader.py": "import importlib\n\n\ndef load_ext(name, funcs):\n" +
			"    return importlib.import_module(\"pkg.\" + name)\n",
		"pkg/ops/loss.py": "import torch\n\nfrom ..utils import ext_loader\n\n" +
			"ext_module = ext_loader.load_ext(\"_ext\", [\"loss_backward\"])\n\n\n" +
			"def loss_backward(input, target, gamma=2.0):\n    buff = input.new_zeros(input.size(0))\n" +
			"    grad_input = input.new_zeros(input.size())\n" +
			"    ext_module.loss_backward(input, target, buff, grad_input, gamma=float(gamma))\n" +
			"    return grad_input\n",
		"pkg/ops/csrc/common/cuda/loss_kernel.cuh": "__global__ void k1(const int nthreads, const float* input, " +
			"const int64_t* target, float* buff, const float gamma) {}\n" +
			"__global__ void k2(const int nthreads, const float* input, const float* buff, float* grad_input) {}\n",
		"pkg/ops/csrc/pytorch/cuda/loss_cuda.cu": "#include \"loss_kernel.cuh\"\n" +
			"void LossBackwardLauncher(Tensor input, Tensor target, Tensor buff, Tensor grad_input, const float gamma) {\n" +
			"  int output_size = buff.numel();\n" +
			"  k1<<<GET_BLOCKS(output_size), 512>>>(output_size, input.data_ptr<float>(),\n" +
			"      target.data_ptr<int64_t>(), buff.data_ptr<float>(), gamma);\n" +
			"  output_size = grad_input.numel();\n" +
			"  k2<<<GET_BLOCKS(output_size), 512>>>(output_size, input.data_ptr<float>(), buff.data_ptr<float>(),\n" +
			"      grad_input.data_ptr<float>());\n}\n",
		"pkg/ops/csrc/pytorch/cuda/cudabind.cpp": "void LossBackwardLauncher(Tensor input, Tensor target, Tensor buff, Tensor grad_input, const float gamma);\n" +
			"void loss_backward_cuda(Tensor input, Tensor target, Tensor buff, Tensor grad_input, float gamma) {\n" +
			"  LossBackwardLauncher(input, target, buff, grad_input, gamma);\n}\n" +
			"void loss_backward_impl(Tensor input, Tensor target, Tensor buff, Tensor grad_input, float gamma);\n" +
			"REGISTER_DEVICE_IMPL(loss_backward_impl, CUDA, loss_backward_cuda);\n",
		"pkg/ops/csrc/pytorch/loss.cpp": "void loss_backward_impl(Tensor input, Tensor target, Tensor buff, Tensor grad_input, float gamma) {\n" +
			"  DISPATCH_DEVICE_IMPL(loss_backward_impl, input, target, buff, grad_input, gamma);\n}\n" +
			"void loss_backward(Tensor input, Tensor target, Tensor buff, Tensor grad_input, float gamma) {\n" +
			"  loss_backward_impl(input, target, buff, grad_input, gamma);\n}\n",
		"pkg/ops/csrc/pytorch/pybind.cpp": "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" +
			"  m.def(\"loss_backward\", &loss_backward, \"loss\", py::arg(\"input\"), py::arg(\"target\"),\n" +
			"        py::arg(\"buff\"), py::arg(\"grad_input\"), py::arg(\"gamma\"));\n}\n",
	}
}

func seqKernels() []WireKernel {
	k1 := &kernels.Kernel{ID: "k-0000000001", Name: "k1", Path: "pkg/ops/csrc/common/cuda/loss_kernel.cuh",
		Spec: &kernels.Spec{Symbols: []string{"rows", "classes"}, Params: []kernels.Param{
			{Name: "nthreads", Kind: "scalar", Role: "size", Expr: "rows"},
			{Name: "input", Kind: "pointer", Role: "input", DType: "float32", Shape: []string{"rows", "classes"}},
			{Name: "target", Kind: "pointer", Role: "input", DType: "int64", Shape: []string{"rows"}},
			{Name: "buff", Kind: "pointer", Role: "output", DType: "float32", Shape: []string{"rows"}},
			{Name: "gamma", Kind: "scalar", Role: "scalar", DType: "float32"}}}}
	k2 := &kernels.Kernel{ID: "k-0000000002", Name: "k2", Path: "pkg/ops/csrc/common/cuda/loss_kernel.cuh",
		Spec: &kernels.Spec{Symbols: []string{"rows", "classes"}, Params: []kernels.Param{
			{Name: "nthreads", Kind: "scalar", Role: "size", Expr: "rows * classes"},
			{Name: "input", Kind: "pointer", Role: "input", DType: "float32", Shape: []string{"rows", "classes"}},
			{Name: "buff", Kind: "pointer", Role: "input", DType: "float32", Shape: []string{"rows"}},
			{Name: "grad_input", Kind: "pointer", Role: "output", DType: "float32", Shape: []string{"rows", "classes"}}}}}
	mod := "import functools\n\n\ndef run(args, *, interpret):\n    return {}\n"
	cases := []ValidatedCase{{Sizes: map[string]int64{"rows": 3, "classes": 5}, Scalars: map[string]float64{"gamma": 2}}}
	return []WireKernel{
		{Kernel: k1, Module: mod, Drafter: DrafterRules, Verdict: "PROVEN (test)", Cases: cases},
		{Kernel: k2, Module: mod, Drafter: DrafterRules, Verdict: "PROVEN (test)", Cases: cases},
	}
}

func treeReader(files map[string]string) (func(string) ([]byte, bool), []string, []string) {
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
	return read, py, srcs
}

// TestWireLaunchSequence: a launcher launching two proven kernels is one op
// whose TPU path runs them in launch order, buff written by the first fed to
// the second, both written back in place; a second run changes nothing.
func TestWireLaunchSequence(t *testing.T) {
	files := seqTree()
	read, py, srcs := treeReader(files)
	ctx := context.Background()
	out, wired, probs := Wire(ctx, seqKernels(), read, py, srcs)
	if len(probs) != 0 || len(wired) != 2 || wired[0].Sites != 1 {
		t.Fatalf("wired %+v, problems %+v", wired, probs)
	}
	got := map[string]string{}
	for _, f := range out {
		got[f.Path] = string(f.Content)
	}
	ops := got["pkg/ops/_pallas_ops.py"]
	for _, w := range []string{
		"from . import _pallas_k1 as kernel0\n",
		"from . import _pallas_k2 as kernel1\n",
		"buff = kernel0.k1_jax(input, target, buff, grad_input, gamma)\n",
		"grad_input: jax.Array",
		"grad_input = kernel1.k2_jax(input, target, buff, grad_input, gamma)\n",
		"return buff, grad_input\n",
		`return jax_op("pallasify_pkg_ops::loss_backward", sequence)`,
		"buff.copy_(buff_new)\n",
		"grad_input.copy_(grad_input_new)\n",
	} {
		if !strings.Contains(ops, w) {
			t.Errorf("ops module lacks %q:\n%s", w, ops)
		}
	}
	if i, j := strings.Index(ops, "kernel0.k1_jax("), strings.Index(ops, "kernel1.k2_jax("); i < 0 || j < i {
		t.Errorf("the kernels do not run in launch order:\n%s", ops)
	}
	for path, want := range map[string]string{
		"pkg/ops/_pallas_k1.py": `return res["buff"].reshape(buff.shape)`,
		"pkg/ops/_pallas_k2.py": `return res["grad_input"].reshape(grad_input.shape)`,
	} {
		if !strings.Contains(got[path], want) {
			t.Errorf("%s lacks %q:\n%s", path, want, got[path])
		}
	}
	if !strings.Contains(got["pkg/ops/loss.py"], "_pallas_ops.loss_backward(input, target, buff, grad_input, float(gamma))") {
		t.Errorf("call site not rewritten:\n%s", got["pkg/ops/loss.py"])
	}
	// second run: nothing changes
	for _, f := range out {
		files[f.Path] = string(f.Content)
	}
	read, py, srcs = treeReader(files)
	again, wired2, probs2 := Wire(ctx, seqKernels(), read, py, srcs)
	if len(again) != 0 || len(probs2) != 0 || len(wired2) != 2 {
		t.Errorf("second run: %d files, wired %+v, problems %+v", len(again), wired2, probs2)
	}
}

// TestLaunchSequenceRefused: a sequence with a kernel that is not proven
// is refused for the proven one, naming the other.
func TestLaunchSequenceRefused(t *testing.T) {
	read, py, srcs := treeReader(seqTree())
	_, wired, probs := Wire(context.Background(), seqKernels()[:1], read, py, srcs)
	if len(wired) != 0 || len(probs) != 1 || !strings.Contains(probs[0].Message, "k2 is not proven") {
		t.Errorf("wired %+v, problems %+v", wired, probs)
	}
}

// branchTree is psamask's shape: the launcher picks one of two kernels by
// a scalar parameter, each written without braces inside a dispatch lambda.
func branchTree() map[string]string {
	return map[string]string{
		"pkg/__init__.py":     "",
		"pkg/ops/__init__.py": "",
		"pkg/utils/ext_loader.py": "import importlib\n\n\ndef load_ext(name, funcs):\n" +
			"    return importlib.import_module(\"pkg.\" + name)\n",
		"pkg/ops/mask.py": "import torch\n\nfrom ..utils import ext_loader\n\n" +
			"ext_module = ext_loader.load_ext(\"_ext\", [\"mask_forward\"])\n\n\n" +
			"def mask(input, psa_type=0):\n    output = input.new_zeros(input.size())\n" +
			"    ext_module.mask_forward(input, output, psa_type=psa_type, n=input.numel())\n" +
			"    return output\n",
		"pkg/ops/csrc/common/cuda/mask_kernel.cuh": "__global__ void collect(const int nthreads, const float* input, float* output) {}\n" +
			"__global__ void distribute(const int nthreads, const float* input, float* output) {}\n",
		"pkg/ops/csrc/pytorch/cuda/mask_cuda.cu": "#include \"mask_kernel.cuh\"\n" +
			"void MaskForwardLauncher(const int psa_type, const Tensor input, Tensor output, const int n) {\n" +
			"  int nthreads = n;\n" +
			"  if (psa_type == 0)\n    AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), \"collect\", [&] {\n" +
			"      collect<scalar_t><<<nthreads, 512, 0, stream>>>(nthreads, input.data_ptr<scalar_t>(), output.data_ptr<scalar_t>());\n" +
			"    });\n  else\n    AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), \"distribute\", [&] {\n" +
			"      distribute<scalar_t><<<nthreads, 512, 0, stream>>>(nthreads, input.data_ptr<scalar_t>(), output.data_ptr<scalar_t>());\n" +
			"    });\n}\n",
		"pkg/ops/csrc/pytorch/cuda/cudabind.cpp": "void MaskForwardLauncher(const int psa_type, const Tensor input, Tensor output, const int n);\n" +
			"void mask_forward_cuda(const int psa_type, const Tensor input, Tensor output, const int n) {\n" +
			"  MaskForwardLauncher(psa_type, input, output, n);\n}\n" +
			"void mask_forward_impl(const int psa_type, const Tensor input, Tensor output, const int n);\n" +
			"REGISTER_DEVICE_IMPL(mask_forward_impl, CUDA, mask_forward_cuda);\n",
		"pkg/ops/csrc/pytorch/mask.cpp": "void mask_forward_impl(const int psa_type, const Tensor input, Tensor output, const int n) {\n" +
			"  DISPATCH_DEVICE_IMPL(mask_forward_impl, psa_type, input, output, n);\n}\n" +
			"void mask_forward(const Tensor input, Tensor output, const int psa_type, const int n) {\n" +
			"  mask_forward_impl(psa_type, input, output, n);\n}\n",
		"pkg/ops/csrc/pytorch/pybind.cpp": "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" +
			"  m.def(\"mask_forward\", &mask_forward, \"mask\", py::arg(\"input\"), py::arg(\"output\"),\n" +
			"        py::arg(\"psa_type\"), py::arg(\"n\"));\n}\n",
	}
}

func branchKernels() []WireKernel {
	var out []WireKernel
	for i, name := range []string{"collect", "distribute"} {
		k := &kernels.Kernel{ID: fmt.Sprintf("k-000000001%d", i), Name: name, Path: "pkg/ops/csrc/common/cuda/mask_kernel.cuh",
			Spec: &kernels.Spec{Symbols: []string{"n"}, Params: []kernels.Param{
				{Name: "nthreads", Kind: "scalar", Role: "size", Expr: "n"},
				{Name: "input", Kind: "pointer", Role: "input", DType: "float32", Shape: []string{"n"}},
				{Name: "output", Kind: "pointer", Role: "output", DType: "float32", Shape: []string{"n"}}}}}
		out = append(out, WireKernel{Kernel: k, Module: "import functools\n\n\ndef run(args, *, interpret):\n    return {}\n",
			Drafter: DrafterRules, Verdict: "PROVEN (test)", Cases: []ValidatedCase{{Sizes: map[string]int64{"n": 6}}}})
	}
	return out
}

// TestWireHostBranch: kernels a launcher picks by a scalar parameter are
// wired as the host picks them (psa_type == 0: collect, else distribute);
// with one of them not proven, its branch raises on tpu, naming it.
func TestWireHostBranch(t *testing.T) {
	ctx := context.Background()
	files := branchTree()
	read, py, srcs := treeReader(files)
	out, wired, probs := Wire(ctx, branchKernels(), read, py, srcs)
	if len(probs) != 0 || len(wired) != 2 || wired[0].Sites != 1 {
		t.Fatalf("wired %+v, problems %+v", wired, probs)
	}
	got := map[string]string{}
	for _, f := range out {
		got[f.Path] = string(f.Content)
	}
	want := "    if psa_type == 0:\n        output.copy_(mask_forward_collect_op()(input, output, psa_type, n))\n" +
		"    else:\n        output.copy_(mask_forward_distribute_op()(input, output, psa_type, n))\n"
	ops := got["pkg/ops/_pallas_ops.py"]
	for _, w := range []string{want, `return jax_op("pallasify_pkg_ops::mask_forward_collect", kernel.collect_jax)`,
		`return jax_op("pallasify_pkg_ops::mask_forward_distribute", kernel.distribute_jax)`} {
		if !strings.Contains(ops, w) {
			t.Errorf("ops module lacks %q:\n%s", w, ops)
		}
	}
	// each module's example is a case the host launches its kernel for
	for path, want := range map[string]string{"pkg/ops/_pallas_collect.py": `"psa_type": 0`,
		"pkg/ops/_pallas_distribute.py": `"psa_type": 1`} {
		if !strings.Contains(got[path], want) {
			t.Errorf("%s lacks %s:\n%s", path, want, got[path])
		}
	}
	for _, f := range out {
		files[f.Path] = string(f.Content)
	}
	read, py, srcs = treeReader(files)
	if again, _, probs2 := Wire(ctx, branchKernels(), read, py, srcs); len(again) != 0 || len(probs2) != 0 {
		t.Errorf("second run: %d files, problems %+v", len(again), probs2)
	}

	read, py, srcs = treeReader(branchTree())
	out, wired, probs = Wire(ctx, branchKernels()[:1], read, py, srcs)
	if len(probs) != 0 || len(wired) != 1 {
		t.Fatalf("collect alone: wired %+v, problems %+v", wired, probs)
	}
	for _, f := range out {
		if f.Path == "pkg/ops/_pallas_ops.py" && !strings.Contains(string(f.Content), "    else:\n        raise NotImplementedError(\n") {
			t.Errorf("the distribute branch does not raise:\n%s", f.Content)
		}
	}
}
