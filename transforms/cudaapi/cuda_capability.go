package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var cudaCapabilityExample = rule.Example{
	Before: `import pytest
import torch

SM = torch.cuda.get_device_capability()


@pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 8, reason="needs sm80")
def test_bf16():
    ...
`,
}

// CudaCapability reports torch.cuda.get_device_capability() outside a CUDA
// check, and says when it runs on import.
var CudaCapability = &rule.Rule{
	Code:    "PCU014",
	Name:    "cuda-capability",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: apiNeedles,
	Example: cudaCapabilityExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.get_device_capability()` asks for a CUDA compute capability",
		What: "Reports `torch.cuda.get_device_capability(...)` where no CUDA check guards it; in the branch of a " +
			"kept CUDA check (cuda-only-guard, PCU012; cuda-only-test, PCU013) that finding speaks for it. The " +
			"message says when the call runs as the module is imported (module level, class bodies, default " +
			"values, decorators such as `pytest.mark.skipif(...)`; the same positions the device rules keep free " +
			"of `torch.device(\"tpu\")`): then importing the module, and collecting its tests, fails on every host " +
			"without a CUDA GPU.",
		Why: "The call raises without a CUDA GPU, a TPU host included, and TorchTPU reports no compute capability " +
			"(`torch.tpu.get_compute_capability()` returns an empty string), so there is nothing to rewrite " +
			"it to: code that compares it with `(8, 0)` chooses a CUDA kernel or dtype.",
		Safety: "Diagnostic only: compute it where it is used (in a function, cached with `functools.cache` if it " +
			"is read often), behind `torch.cuda.is_available() and ...`, and give the TPU its own choice (bf16 is " +
			"always supported there).",
	}, cudaCapabilityExample),
	Run: func(p *rule.Pass) {
		cudaCalls(p, []string{"get_device_capability"}, func(c apiCall) {
			if _, ok := kit.InCUDAOnlyGuard(p, kit.Start(c.call), kit.End(c.call)); ok {
				return
			}
			msg := "asks for a CUDA compute capability: it raises without a CUDA GPU, a TPU host included, and " +
				"TorchTPU has none"
			if kit.ImportTime(p, c.call) {
				msg += "; it runs when the module is imported, so importing it (and collecting its tests) fails " +
					"on every host without a CUDA GPU: call it where the value is used, behind a CUDA check"
			} else {
				msg += ": call it behind a CUDA check (torch.cuda.is_available() and ...) and give the TPU its own path"
			}
			kit.Report(p, c.finding(p, msg))
		})
	},
}
