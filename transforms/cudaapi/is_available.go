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

if hasattr(torch, "tpu") and torch.tpu.is_available():
    model = model.half()
`,
}

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
		What: "Portable: `torch.accelerator.is_available()`. TPU: `hasattr(torch, \"tpu\") and torch.tpu.is_available()` " +
			"(parenthesised where precedence needs it).",
		Why: "On a TPU host `torch.cuda.is_available()` is False, so code guarded by it takes the CPU path. TorchTPU " +
			"registers the `torch.tpu` module only when TPU devices exist (torchtpu.md §1), hence the `hasattr` probe.",
		Safety: "Safe: on a CUDA machine `torch.accelerator.is_available()` is True exactly when CUDA is. On a machine " +
			"with another accelerator (MPS, XPU, TPU) it becomes True, which is the point of the portable target.",
	}, isAvailableExample),
	Run: func(p *rule.Pass) {
		cudaCalls(p, []string{"is_available"}, func(c apiCall) {
			if len(c.args.All) > 0 {
				return
			}
			f := c.finding(p, "probes for CUDA only")
			if p.Target == rule.TPU {
				f.Fix = devkit.TorchFix("Probe for TorchTPU", rule.Safe,
					c.whole(devkit.Paren(c.call, `hasattr(torch, "tpu") and torch.tpu.is_available()`, false)))
			} else {
				f.Fix = devkit.TorchFix("Call torch.accelerator.is_available", rule.Safe, c.callee("torch.accelerator.is_available"))
			}
			devkit.Report(p, f)
		})
	},
}
