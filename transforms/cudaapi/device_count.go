package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var deviceCountExample = rule.Example{
	Before: `import torch

world_size = torch.cuda.device_count()
`,
	Portable: `import torch

world_size = torch.accelerator.device_count()
`,
	TPU: `import torch

world_size = torch.accelerator.device_count()
`,
}

// DeviceCount rewrites torch.cuda.device_count().
var DeviceCount = &rule.Rule{
	Code:   "PCU002",
	Name:   "cuda-device-count",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: deviceCountExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.device_count()` counts CUDA devices only",
		What: "Both targets: `torch.accelerator.device_count()`, the device count of the current accelerator (on a " +
			"TPU host, the chips this process sees; 0 where there is no accelerator).",
		Why: "On a TPU host the CUDA count is 0, so data-parallel code spawns no workers or falls back to the CPU. " +
			"TorchTPU 0.2.0 defers to `torch.accelerator` here: user code calling `torch.tpu.device_count()` raises " +
			"RuntimeError (it is internal to TorchTPU from torch 2.11 on; the error points to `torch.accelerator.device_count`).",
		Safety: "Safe: the same count on a CUDA machine; 0 where there is no accelerator, as before.",
	}, deviceCountExample),
	Run: func(p *rule.Pass) {
		cudaCalls(p, []string{"device_count"}, func(c apiCall) {
			if len(c.args.All) > 0 {
				return
			}
			f := c.finding(p, "counts CUDA devices only")
			f.Fix = kit.TorchFix("Call torch.accelerator.device_count", rule.Safe, c.callee("torch.accelerator.device_count"))
			kit.Report(p, f)
		})
	},
}
