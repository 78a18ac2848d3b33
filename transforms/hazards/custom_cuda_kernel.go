package hazards

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var customKernelExample = rule.Example{
	Before: `from torch.utils.cpp_extension import load_inline

ext = load_inline(name="scale", cpp_sources=CPP, cuda_sources=CUDA, functions=["scale"])
`,
}

// kernelCalls maps a qualified builder to the kernel origin recorded by the
// kernel stage (pipeline.Kernel.Origin).
var kernelCalls = map[string]string{
	"torch.utils.cpp_extension.load_inline":   "load_inline",
	"torch.utils.cpp_extension.load":          "load",
	"torch.utils.cpp_extension.CUDAExtension": "cuda-extension",
	"cupy.RawKernel":                          "cupy",
	"cupy.RawModule":                          "cupy",
	"cupy.ElementwiseKernel":                  "cupy",
	"cupy.ReductionKernel":                    "cupy",
	"numba.cuda.jit":                          "numba",
}

var kernelDecorators = map[string]string{
	"triton.jit":      "triton",
	"triton.autotune": "triton",
	"numba.cuda.jit":  "numba",
}

// CustomCudaKernel reports the Python call sites of custom CUDA kernels.
var CustomCudaKernel = &rule.Rule{
	Code:   "PDX006",
	Name:   "custom-cuda-kernel",
	Family: Family,
	Safety: rule.DisplayOnly,
	// Every reported name resolves through the imports to a qualified name
	// whose components are source text: torch.utils.cpp_extension.*, cupy.*,
	// triton.*, numba.cuda.jit; cupy, triton and numba are first names, which
	// an import names as code with no "." before them (`\q\m`).
	Needles: []string{`\bcpp_extension\b`, `\q\m\bcupy\b`, `\q\m\btriton\b`, `\q\m\bnumba\b`},
	Example: customKernelExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Custom CUDA kernel (load_inline, load, CUDAExtension, Triton, CuPy): handed to the kernel stage",
		What: "Reports `torch.utils.cpp_extension.load_inline(...)`, `load(...)`, `CUDAExtension(...)` (in setup.py), " +
			"CuPy raw kernels, and functions decorated with `@triton.jit`, `@triton.autotune` or `@numba.cuda.jit`.",
		Why: "A CUDA kernel cannot run on a TPU. TorchTPU runs custom kernels written in JAX Pallas through " +
			"`jax_op` (`torch.tpu.pallas.jax_op`, which makes a JAX function a `torch.library` custom op); it needs an annotated signature, a fake for dynamic shapes, autograd for " +
			"training and `donate_argnums` for in-place semantics. pallasify's kernel stage drafts that " +
			"replacement and proves it numerically against the original kernel; the Python call site stays as it is " +
			"until a proven draft exists.",
		Safety: "Diagnostic only: the kernel stage, not a rewrite rule, produces the replacement.",
	}, customKernelExample),
	Run: runCustomCudaKernel,
}

func runCustomCudaKernel(p *rule.Pass) {
	msg := func(origin string) string {
		return "custom CUDA kernel (" + origin + "): cannot run on TPU; handed to the kernel stage, which drafts a Pallas " +
			"jax_op replacement and validates it against this kernel"
	}
	kit.Calls(p, func(call *ts.Node) {
		if origin, ok := kernelCalls[kit.CallName(p, call)]; ok {
			if par := call.Parent(); par != nil && par.Type() == "decorator" {
				return // reported as a decorator below
			}
			p.Report(kit.Finding(call, msg(origin), nil))
		}
	})
	kit.Nodes(p, "decorator", func(d *ts.Node) {
		for _, c := range ts.Children(d) {
			target := c
			if c.Type() == "call" {
				target = c.ChildByFieldName("function")
			}
			origin, ok := kernelDecorators[kit.Qualified(p, target)]
			if !ok {
				continue
			}
			def := d.Parent()
			if def != nil && def.Type() == "decorated_definition" {
				if fn := def.ChildByFieldName("definition"); fn != nil && fn.ChildByFieldName("name") != nil {
					p.Report(kit.Finding(d, msg(origin)+" (`"+p.Text(fn.ChildByFieldName("name"))+"`)", nil))
					return
				}
			}
			p.Report(kit.Finding(d, msg(origin), nil))
			return
		}
	})
}
