package hazards

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var cudaCPUTestExample = rule.Example{
	Before: `import pytest
import torch


def test_matches_cpu():
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.cuda()).cpu())
`,
}

// CudaCPUTest reports tests that compare CUDA with the CPU, whose device
// rewrites the portable target leaves alone.
var CudaCPUTest = &rule.Rule{
	Code:   "PDX012",
	Name:   "cuda-vs-cpu-test",
	Family: Family,
	Safety: rule.DisplayOnly,
	// `\q` (rule.StringStart) is sound: kit.CrossChecks needs a test whose
	// body mentions cuda by the pre-check's own measure (kit's mentionsCUDA:
	// in code, in an f-string, or opening a literal that is not a statement).
	// That mention may be part of a longer name (`use_cuda`), so `cuda` has
	// no `\b`; but the test is a function whose name starts with "test"
	// (a whole name in code, after `def`), so `\btest` holds too.
	Needles: []string{`\qcuda & \btest`},
	Example: cudaCPUTestExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "A test compares a CUDA result with a CPU one",
		What: "Reports a test function (`test*` in a test module: `test_*.py`, " +
			"`*_test.py`, under `tests/`, or importing pytest or unittest) whose body uses CUDA and the CPU " +
			"(`.cpu()`, a `\"cpu\"` string) and that nothing skips on a host without CUDA (no `skip`, no " +
			"`is_available` in it, its decorators or its class). The device rules (PDV, PCU, PAM, PDS) leave every " +
			"site inside it unfixed on the portable target, each finding saying why; the tpu target rewrites them.",
		Why: "The portable rewrite of `.cuda()` is `.to(DEVICE)`, and DEVICE is the CPU on a machine without CUDA " +
			"or a TPU: the test would then compare the CPU with itself and pass vacuously, where the original " +
			"failed (or was skipped). Guard it (`@pytest.mark.skipif(DEVICE.type == \"cpu\", ...)`) and then " +
			"rewrite it, or keep it CUDA-only.",
		Safety: "Diagnostic only. On the tpu target the same test compares the TPU with the CPU, which is " +
			"meaningful, so its sites are rewritten there; the finding says it needs a TPU to run.",
	}, cudaCPUTestExample),
	Run: func(p *rule.Pass) {
		why := ": on a host without CUDA the portable rewrite would compare the CPU with itself, so its device " +
			"sites are left as they are; skip it where DEVICE.type == \"cpu\", then rewrite it"
		if p.Target == rule.TPU {
			why = ": rewritten, it compares the TPU with the CPU and needs a TPU to run (skip it elsewhere)"
		}
		for _, c := range kit.CrossChecks(p) {
			p.Report(kit.Finding(c.Name, "`"+p.Text(c.Name)+"` compares CUDA with the CPU"+why, nil))
		}
	},
}
