package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var cudaOnlyTestExample = rule.Example{
	Before: `import torch
from tests.conftest import RunIf


@RunIf(min_cuda_gpus=2)
def test_two_devices():
    x = torch.ones(2, device="cuda:1")
    assert str(x.device) == "cuda:1"
`,
}

// CudaOnlyTest reports tests kept CUDA-only as a whole (kit.CUDAOnlyGuards,
// the guards whose Test is set).
var CudaOnlyTest = &rule.Rule{
	Code:    kit.CUDAOnlyTestCode,
	Name:    "cuda-only-test",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{"cuda", "gpu", "GPU", "CUDA", "Cuda", "Gpu"},
	Example: cudaOnlyTestExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "A test that runs only with CUDA GPUs is kept as it is",
		What: "Judges every decorated test function or class (a name pytest or unittest collects: `test...`, " +
			"`Test...`). It is kept exactly as it is, on both targets, when a decorator asks for CUDA GPUs by its " +
			"name or a keyword (`@RunIf(min_cuda_gpus=2)`, `@require_torch_gpu`, `@requires_cuda`, " +
			"`@pytest.mark.cuda`, `@pytest.mark.gpu`), or when a skip decorator's condition checks for CUDA " +
			"(`@pytest.mark.skipif(not torch.cuda.is_available(), ...)`, `@unittest.skipUnless(...)`) and the " +
			"test's body does CUDA-only work, judged as cuda-only-guard (PCU012) judges a branch. The finding " +
			"sits on the decorator and names why; the other rules' findings inside the test stay in the report " +
			"with their fixes withheld. A skip decorator in front of a body that migrates is rewritten as before " +
			"(cuda-is-available, PCU001), so that test runs on a TPU host too.",
		Why: "Such a test is skipped wherever there are no CUDA GPUs, before and after the migration, so a TPU " +
			"host never runs it: rewriting `\"cuda:1\"` inside it to a TPU device changes nothing a TPU run " +
			"sees and adds hunks a maintainer has to review; rewriting its skip condition would send a TPU host " +
			"into CUDA-only work.",
		Safety: "Diagnostic only: the test still guards the CUDA path on CUDA hosts; a TPU counterpart, if the " +
			"behaviour matters on TPU, is written by hand.",
	}, cudaOnlyTestExample),
	Run: func(p *rule.Pass) {
		for _, g := range kit.CUDAOnlyGuards(p) {
			if !g.Test {
				continue
			}
			kit.Report(p, kit.Finding(g.Cond, "CUDA-only test kept as it is: "+g.Reason()+
				"; a host without CUDA GPUs skips it, before and after the migration", nil))
		}
	},
}
