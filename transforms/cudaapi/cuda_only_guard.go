package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var cudaOnlyGuardExample = rule.Example{
	Before: `import torch

if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)
    print("sm", props.major)
`,
}

// CudaOnlyGuard reports CUDA checks left as they are because the branch they
// select does CUDA-only work (kit.CUDAOnlyGuards).
var CudaOnlyGuard = &rule.Rule{
	Code:   kit.CUDAOnlyGuardCode,
	Name:   "cuda-only-guard",
	Family: Family,
	Safety: rule.DisplayOnly,
	// A guard's condition mentions cuda where the pipeline's pre-check
	// counts `\qcuda` (kit.CUDAOnlyGuards uses the same test as
	// kit.CrossChecks): in code, or opening a string literal.
	Needles: []string{`\qcuda`},
	Example: cudaOnlyGuardExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "A CUDA check is kept because the branch it selects does CUDA-only work",
		What: "Judges every condition that checks for CUDA (`torch.cuda.is_available()`, `x.is_cuda`, " +
			"`device.type == \"cuda\"`, `\"cuda\" in str(device)`, `impl == \"cuda\"`, or a flag the module sets " +
			"to such a check, `self.use_cuda = torch.cuda.is_available()`) by the branch it selects: " +
			"the body, the true arm of `a if c else b`, the right operand of `c and work`, or the else part of " +
			"`not ...` / `!= \"cuda\"`, together with " +
			"the functions of the same module that branch calls (and methods through `self.`), three calls deep. " +
			"When that code does something that stays CUDA-only after the migration, the check and the branch are " +
			"left exactly as they are (a flag's value too), on both targets, and this finding names the first such thing and its line: " +
			"a `torch.cuda` API no rule rewrites (`Stream`, `stream`, `Event`, graphs, `nvtx`, " +
			"`get_device_capability`, ...), a CUDA-only field of `get_device_properties(...)` (`.major`, `.minor`, " +
			"`.uuid`, ...), `torch.backends.cudnn`/`torch.backends.cuda` settings, pynvml, CuPy, PyCUDA, Triton, " +
			"apex, flash_attn, xformers, bitsandbytes, `torch.utils.cpp_extension`, ONNX Runtime's " +
			"`\"CUDAExecutionProvider\"`, Lightning's `\"cuda\"`/`\"gpu\"` accelerator (a value a Trainer or Fabric gets as " +
			"`accelerator=`, also through a variable: `accelerator = \"cuda\"`; see lightning-accelerator, PDX014), " +
			"a custom CUDA extension (a name bound by `cpp_extension.load`/`load_inline`, " +
			"or an extension or op named for CUDA such as `selective_scan_cuda.fwd`) unless its call already sends tpu " +
			"tensors to a Pallas kernel (`_pallas_ops.f(x) if x.device.type == \"tpu\" else ext.f(x)`, what the kernel " +
			"stage writes when it wires a proven kernel), or a returned CUDA device string (`return \"cuda:0\"`). The " +
			"other rules' findings in the branch stay in the report with their fixes withheld; theirs on the check " +
			"itself give way to this one. The kernel stage wires after the rules have run, so a guard in front of a " +
			"kernel wired in the same run is rewritten by the next run.\n\n" +
			"A check whose branch is device-agnostic after the migration is rewritten as before " +
			"(cuda-is-available, PCU001; device-type-compare; cuda-device-string, PDV001): " +
			"`if torch.cuda.is_available(): model = model.half()` becomes `if torch.accelerator.is_available() and " +
			"torch.accelerator.current_accelerator().type == \"tpu\": model = model.half()` on the tpu target.",
		Why: "Rewriting the check alone sends a TPU host into a branch written for CUDA: `torch.cuda.Stream()`, " +
			"`props.major` (TorchTPU's device properties have no compute capability), NVML or a CUDA extension op " +
			"then fail there, where the original took its other path, which runs on a TPU as it is. A guard in " +
			"front of a custom CUDA kernel would send tpu tensors into the CUDA op instead of the repository's own " +
			"reference path.",
		Safety: "Diagnostic only: the branch needs a TPU counterpart written by hand (or the kernel stage's proven " +
			"Pallas kernel for a custom op); until then a TPU takes the other path, as the original did.",
	}, cudaOnlyGuardExample),
	Run: func(p *rule.Pass) {
		for _, g := range kit.CUDAOnlyGuards(p) {
			if g.Test {
				continue // cuda-only-test's
			}
			kit.Report(p, kit.Finding(g.Cond, "CUDA check kept CUDA-only: the branch it selects does CUDA-only work, "+
				g.Reason()+"; a TPU takes the other path, as before the migration", nil))
		}
	},
}
