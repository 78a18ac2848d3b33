package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var isAvailableExample = rule.Example{
	Before: `import torch

if torch.cuda.is_available():
    model = model.half()
`,
	Portable: `import torch

if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in ("cuda", "tpu"):
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

// portableAvailable is the portable probe: CUDA exactly where the original
// found it, plus a TPU; never MPS or XPU, where the original took its CPU path
// (the same test as DEVICE.type != "cpu", without needing DEVICE).
const portableAvailable = `torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in ("cuda", "tpu")`

// keptKeywords are keyword arguments whose value torch.cuda.is_available()
// stays: fused=/foreach= pick an optimizer kernel that was chosen for CUDA,
// and the CUDA probe is True exactly there (False on TPU, MPS and the CPU,
// which is the unfused path the original took on those hosts).
var keptKeywords = map[string]bool{"fused": true, "foreach": true}

// keptKeyword reports whether call is the whole value of a keptKeywords argument.
func keptKeyword(p *rule.Pass, call *ts.Node) bool {
	par := call.Parent()
	for par != nil && par.Type() == "parenthesized_expression" {
		par = par.Parent()
	}
	return par != nil && par.Type() == "keyword_argument" && keptKeywords[p.Text(par.ChildByFieldName("name"))]
}

// IsAvailable rewrites torch.cuda.is_available().
var IsAvailable = &rule.Rule{
	Code:   "PCU001",
	Name:   "cuda-is-available",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: isAvailableExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.is_available()` probes for CUDA only",
		What: "Portable: `torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in " +
			"(\"cuda\", \"tpu\")`. TPU: `torch.accelerator.is_available() and " +
			"torch.accelerator.current_accelerator().type == \"tpu\"`, the probe of transformers' " +
			"`is_torch_tpu_available()`. Both are parenthesised where precedence needs it. The value of a `fused=` or " +
			"`foreach=` keyword (`AdamW(..., fused=torch.cuda.is_available())`) is left as it is: it picks an " +
			"optimizer kernel for CUDA, and the CUDA probe is True exactly there.",
		Why: "On a TPU host `torch.cuda.is_available()` is False, so code guarded by it takes the CPU path. TorchTPU " +
			"0.2.0 defers device probing to `torch.accelerator`: user code calling `torch.tpu.is_available()` raises " +
			"RuntimeError (it is internal to TorchTPU from torch 2.11 on), and `hasattr(torch, \"tpu\")` is True on " +
			"any host where the package is installed, TPU or not. " +
			"`current_accelerator()` is the compiled-in accelerator (CUDA on PyPI's torch even without a GPU, tpu " +
			"where a TPU initialises) and may be None, hence `is_available()` first.",
		Safety: "Safe. Portable, per host: on a CUDA machine the probe is True exactly when " +
			"`torch.cuda.is_available()` is; on a CPU-only machine and on MPS or XPU it is False, as the original " +
			"was (the guarded CUDA path is never widened to another accelerator: a body that builds a CUDA device " +
			"would fail there, and `device_type` would switch to `\"mps\"` with its autocast and fused kernels); on a " +
			"TPU it is True, which is the point of the migration. The tpu target's probe is True exactly where " +
			"TorchTPU has a chip, as the original was where CUDA had a GPU, and False on CUDA, CPU and MPS hosts.",
	}, isAvailableExample),
	Run: func(p *rule.Pass) {
		cudaCalls(p, []string{"is_available"}, func(c apiCall) {
			if len(c.args.All) > 0 || keptKeyword(p, c.call) {
				return
			}
			f := c.finding(p, "probes for CUDA only")
			if p.Target == rule.TPU {
				f.Fix = kit.TorchFix("Probe for TorchTPU", rule.Safe,
					c.whole(kit.Paren(c.call, tpuAvailable, false)))
			} else {
				f.Fix = kit.TorchFix("Probe for CUDA or TorchTPU", rule.Safe,
					c.whole(kit.Paren(c.call, portableAvailable, false)))
			}
			kit.Report(p, f)
		})
	},
}
