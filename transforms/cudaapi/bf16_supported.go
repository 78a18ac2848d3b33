package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var bf16SupportedExample = rule.Example{
	Before: `import torch

dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
`,
	Portable: `import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

dtype = torch.bfloat16 if getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)() else torch.float16
`,
	TPU: `import torch

dtype = torch.bfloat16
`,
}

// Bf16Supported rewrites torch.cuda.is_bf16_supported().
var Bf16Supported = &rule.Rule{
	Code:   "PCU008",
	Name:   "cuda-bf16-supported",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: bf16SupportedExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.is_bf16_supported()` asks CUDA only",
		What: "Portable: ask DEVICE's backend module, and answer True where it has no such function " +
			"(`getattr(torch.get_device_module(DEVICE), \"is_bf16_supported\", lambda *args, **kwargs: True)(...)`). " +
			"TPU: `True`.",
		Why: "bf16 is the TPU's native matmul type (the MXU takes bf16 and accumulates in f32) and `torch.tpu.is_bf16_supported` " +
			"does not exist (transformers treats bf16 as always supported on TorchTPU). Without CUDA the original " +
			"call raises or answers False, steering the code to fp16.",
		Safety: "Safe: on a CUDA machine the same function answers; the CPU and TPU support bf16.",
	}, bf16SupportedExample),
	Run: func(p *rule.Pass) {
		dv := kit.NewDev(p)
		cudaCalls(p, []string{"is_bf16_supported"}, func(c apiCall) {
			f := c.finding(p, "asks CUDA only")
			if p.Target == rule.TPU {
				f.Fix = &rule.Fix{Title: "bf16 is native on TPU", Safety: rule.Safe, Edits: kit.Constant(p, c.call, true)}
			} else {
				f.Fix = dv.Fix("Ask DEVICE's backend", rule.Safe,
					c.callee(`getattr(torch.get_device_module(`+dv.Name()+`), "is_bf16_supported", lambda *args, **kwargs: True)`))
			}
			kit.Report(p, f)
		})
	},
}
