package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/device/devkit"
	"github.com/pallasify/pallasify/transforms/rule"
)

var deviceCountExample = rule.Example{
	Before: `import torch

world_size = torch.cuda.device_count()
`,
	Portable: `import torch

world_size = torch.accelerator.device_count()
`,
	TPU: `import torch

world_size = torch.tpu.device_count() if hasattr(torch, "tpu") else 0
`,
}

// DeviceCount rewrites torch.cuda.device_count().
var DeviceCount = &rule.Rule{
	Code:   "PCU002",
	Name:   "cuda-device-count",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run).
	Needles: []string{"cuda"},
	Example: deviceCountExample,
	Doc: devkit.Doc(devkit.DocSpec{
		Title: "`torch.cuda.device_count()` counts CUDA devices only",
		What: "Portable: `torch.accelerator.device_count()`. TPU: `torch.tpu.device_count() if hasattr(torch, \"tpu\") else 0` " +
			"(the local chip count; parenthesised where precedence needs it).",
		Why:    "On a TPU host the CUDA count is 0, so data-parallel code spawns no workers or falls back to the CPU.",
		Safety: "Safe: the same count on a CUDA machine; 0 where there is no accelerator, as before.",
	}, deviceCountExample),
	Run: func(p *rule.Pass) {
		cudaCalls(p, []string{"device_count"}, func(c apiCall) {
			if len(c.args.All) > 0 {
				return
			}
			f := c.finding(p, "counts CUDA devices only")
			if p.Target == rule.TPU {
				f.Fix = devkit.TorchFix("Count TPU chips", rule.Safe,
					c.whole(devkit.Paren(c.call, `torch.tpu.device_count() if hasattr(torch, "tpu") else 0`, true)))
			} else {
				f.Fix = devkit.TorchFix("Call torch.accelerator.device_count", rule.Safe, c.callee("torch.accelerator.device_count"))
			}
			devkit.Report(p, f)
		})
	},
}
