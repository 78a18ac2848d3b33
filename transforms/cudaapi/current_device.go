package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var currentDeviceExample = rule.Example{
	Before: `import torch

idx = torch.cuda.current_device()
`,
	Portable: `import torch

idx = torch.accelerator.current_device_index()
`,
	TPU: `import torch

idx = torch.accelerator.current_device_index()
`,
}

// CurrentDevice rewrites torch.cuda.current_device().
var CurrentDevice = &rule.Rule{
	Code:   "PCU003",
	Name:   "cuda-current-device",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: currentDeviceExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.current_device()` asks CUDA for the current index",
		What:  "Both targets: `torch.accelerator.current_device_index()` (on TorchTPU always 0: one chip per process).",
		Why: "The CUDA call fails without CUDA; the replacement returns an `int` index, as the original does. " +
			"TorchTPU 0.2.0 defers to it: user code calling `torch.tpu.current_device()` raises RuntimeError " +
			"(it is internal to TorchTPU from torch 2.11 on; the error points to `torch.accelerator.current_device_index`).",
		Safety: "Safe: the same index on a CUDA machine.",
	}, currentDeviceExample),
	Run: func(p *rule.Pass) {
		simpleReplace(p, []string{"current_device"}, "torch.accelerator.current_device_index", "torch.accelerator.current_device_index",
			"asks CUDA for the current device")
	},
}
