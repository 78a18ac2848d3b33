package hazards

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaEventExample = rule.Example{
	Before: `import torch

start = torch.cuda.Event(enable_timing=True)
end = torch.cuda.Event(enable_timing=True)
start.record()
y = model(x)
end.record()
torch.cuda.synchronize()
ms = start.elapsed_time(end)
`,
}

// CudaEventTiming reports CUDA events, which are placeholders on TPU.
var CudaEventTiming = &rule.Rule{
	Code:   "PDX002",
	Name:   "cuda-event-timing",
	Family: Family,
	Safety: rule.DisplayOnly,
	// A finding is a call qualified as torch.cuda.Event, whose components
	// are whole names in code (the call or its import), or a call of an
	// attribute named elapsed_time: `\q`, `\b` and `\(` hold.
	Needles: []string{`\q\bEvent\b & \q\bcuda\b`, `\q\belapsed_time\(`},
	Example: cudaEventExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "CUDA events used for timing or ordering",
		What:  "Reports `torch.cuda.Event(...)` constructions and `.elapsed_time(...)` calls.",
		Why: "TorchTPU's events are placeholders: XLA/PjRt orders execution, and `TpuEvent.elapsed_time` raises " +
			"NotImplementedError. Time a region with a synchronize on each side and the host clock:\n\n" +
			"```python\ntorch.accelerator.synchronize()\nt0 = time.perf_counter()\ny = model(x)\ntorch.accelerator.synchronize()\n" +
			"ms = (time.perf_counter() - t0) * 1000\n```\n\nEvents used only to order work between streams can be dropped.",
		Safety: "Diagnostic only: replacing an event pair with host timing moves code across statements, which a human should review.",
	}, cudaEventExample),
	Run: runCudaEventTiming,
}

func runCudaEventTiming(p *rule.Pass) {
	kit.Calls(p, func(call *ts.Node) {
		name := kit.CallName(p, call)
		fn := call.ChildByFieldName("function")
		switch {
		case name == "torch.cuda.Event":
			if v, ok := kit.Bool(kit.KwargValue(p, kit.Args(call), "enable_timing")); ok && v {
				p.Report(kit.Finding(call, "CUDA event timing: TpuEvent.elapsed_time raises NotImplementedError; "+
					"time with torch.accelerator.synchronize() and time.perf_counter() instead", nil))
				return
			}
			p.Report(kit.Finding(call, "CUDA event: events are placeholders on TPU (XLA orders execution); "+
				"drop it, or use torch.accelerator.synchronize() where a host wait is needed", nil))
		case fn != nil && fn.Type() == "attribute" && p.Text(fn.ChildByFieldName("attribute")) == "elapsed_time" &&
			len(kit.Positional(kit.Args(call))) == 1:
			p.Report(kit.Finding(call, "elapsed_time on an event raises NotImplementedError on TPU; "+
				"measure with torch.accelerator.synchronize() and time.perf_counter()", nil))
		}
	})
}
