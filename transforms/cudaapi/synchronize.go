package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var synchronizeExample = rule.Example{
	Before: `import time

import torch

start = time.perf_counter()
y = model(x)
torch.cuda.synchronize()
elapsed = time.perf_counter() - start
`,
	Portable: `import time

import torch

start = time.perf_counter()
y = model(x)
if torch.accelerator.is_available():
    torch.accelerator.synchronize()
elapsed = time.perf_counter() - start
`,
	TPU: `import time

import torch

start = time.perf_counter()
y = model(x)
torch.accelerator.synchronize()
elapsed = time.perf_counter() - start
`,
}

// Synchronize rewrites torch.cuda.synchronize().
var Synchronize = &rule.Rule{
	Code:   "PCU005",
	Name:   "cuda-synchronize",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: synchronizeExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.synchronize()` waits for CUDA only",
		What: "Portable: `torch.accelerator.synchronize(...)`, and when the call is a statement of its own it is put " +
			"under `if torch.accelerator.is_available():` so the code still runs on a CPU-only machine. " +
			"TPU: `torch.accelerator.synchronize(...)`, unguarded. The device argument is kept, made positional " +
			"(`torch.accelerator.synchronize(device=None, /)` takes no keyword).",
		Why: "Timing code and host/device hand-offs need the wait on every backend; on TorchTPU execution is " +
			"asynchronous by default (its default eager mode dispatches ops without waiting for them), so dropping the call would make timings meaningless. TorchTPU " +
			"0.2.0 defers to `torch.accelerator` here: user code calling `torch.tpu.synchronize()` raises " +
			"RuntimeError (internal to TorchTPU from torch 2.11 on; the error points to `torch.accelerator.synchronize`).",
		Safety: "Safe: the same wait on a CUDA machine; no wait where there is no accelerator (the original raised there).",
	}, synchronizeExample),
	Run: func(p *rule.Pass) {
		cudaCalls(p, []string{"synchronize"}, func(c apiCall) {
			f := c.finding(p, "waits for CUDA only")
			edits := append([]rule.Edit{c.callee("torch.accelerator.synchronize")}, c.positional("device")...)
			if p.Target == rule.TPU {
				f.Fix = kit.TorchFix("Call torch.accelerator.synchronize", rule.Safe, edits...)
				kit.Report(p, f)
				return
			}
			if stmt := kit.ExprStatement(c.call); stmt != nil {
				if guard, ok := kit.GuardStatement(p.Src, stmt, "torch.accelerator.is_available()"); ok {
					edits = append(guard, edits...)
				}
			}
			f.Fix = kit.TorchFix("Call torch.accelerator.synchronize", rule.Safe, edits...)
			kit.Report(p, f)
		})
	},
}
