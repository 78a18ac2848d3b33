package hazards

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var nvtxExample = rule.Example{
	Before: `import torch

torch.cuda.nvtx.range_push("forward")
y = model(x)
torch.cuda.nvtx.range_pop()
`,
}

// Nvtx reports NVTX profiler ranges.
var Nvtx = &rule.Rule{
	Code:    "PDX010",
	Name:    "nvtx-ranges",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{"nvtx"},
	Example: nvtxExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "NVTX profiler ranges",
		What:  "Reports calls of `torch.cuda.nvtx.*`, `torch.autograd.profiler.emit_nvtx` and the `nvtx` package.",
		Why: "NVTX annotates Nsight timelines; it has no TPU counterpart. " +
			"`torch.profiler.record_function(\"name\")` marks the same region in a device-neutral way.",
		Safety: "Diagnostic only: a push/pop pair becomes one `with` block, which moves code.",
	}, nvtxExample),
	Run: runNvtx,
}

func runNvtx(p *rule.Pass) {
	kit.Calls(p, func(call *ts.Node) {
		name := kit.CallName(p, call)
		if strings.HasPrefix(name, "torch.cuda.nvtx.") || strings.HasPrefix(name, "nvtx.") ||
			name == "torch.autograd.profiler.emit_nvtx" {
			p.Report(kit.Finding(call, "NVTX (`"+p.Text(call.ChildByFieldName("function"))+"`) has no effect on TPU; "+
				"use torch.profiler.record_function(...) or drop it", nil))
		}
	})
}
