package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/device/devkit"
	"github.com/pallasify/pallasify/transforms/rule"
)

var isAvailableExample = rule.Example{
	Before: `import torch

if torch.cuda.is_available():
    model = model.half()
`,
	Portable: `import torch

if torch.accelerator.is_available():
    model = model.half()
`,
	TPU: `import torch

if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu":
    model = model.half()
`,
}

// tpuAvailable is the tpu target's probe for a usable TPU: torch.accelerator
// answers for TorchTPU 0.2.0 (torch.tpu.is_available raises for user code).
const tpuAvailable = `torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu"`

// IsAvailable rewrites torch.cuda.is_available().
var IsAvailable = &rule.Rule{
	Code:   "PCU001",
	Name:   "cuda-is-available",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run).
	Needles: []string{"cuda"},
	Example: isAvailableExample,
	Doc: devkit.Doc(devkit.DocSpec{
		Title: "`torch.cuda.is_available()` probes for CUDA only",
		What: "Portable: `torch.accelerator.is_available()`. TPU: `torch.accelerator.is_available() and " +
			"torch.accelerator.current_accelerator().type == \"tpu\"` (parenthesised where precedence needs it), the " +
			"probe of transformers' `is_torch_tpu_available()`.",
		Why: "On a TPU host `torch.cuda.is_available()` is False, so code guarded by it takes the CPU path. TorchTPU " +
			"0.2.0 defers device probing to `torch.accelerator`: user code calling `torch.tpu.is_available()` raises " +
			"RuntimeError (it is internal to TorchTPU from torch 2.11 on), and `hasattr(torch, \"tpu\")` is True on " +
			"any host where the package is installed, TPU or not (torchtpu.md, confirmed section). " +
			"`current_accelerator()` is the compiled-in accelerator (CUDA on PyPI's torch even without a GPU, tpu " +
			"where a TPU initialises) and may be None, hence `is_available()` first.",
		Safety: "Safe: on a CUDA machine `torch.accelerator.is_available()` is True exactly when CUDA is. On a machine " +
			"with another accelerator (MPS, XPU, TPU) it becomes True, which is the point of the portable target. " +
			"The tpu target's probe is True exactly where TorchTPU has a chip, as the original was where CUDA had a GPU.",
	}, isAvailableExample),
	Run: func(p *rule.Pass) {
		cudaCalls(p, []string{"is_available"}, func(c apiCall) {
			if len(c.args.All) > 0 {
				return
			}
			f := c.finding(p, "probes for CUDA only")
			if p.Target == rule.TPU {
				f.Fix = devkit.TorchFix("Probe for TorchTPU", rule.Safe,
					c.whole(devkit.Paren(c.call, tpuAvailable, false)))
			} else {
				f.Fix = devkit.TorchFix("Call torch.accelerator.is_available", rule.Safe, c.callee("torch.accelerator.is_available"))
			}
			devkit.Report(p, f)
		})
	},
}
