package hazards

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaGraphsExample = rule.Example{
	Before: `import torch

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_out = model(static_in)
g.replay()
`,
}

var cudaGraphCalls = map[string]bool{
	"torch.cuda.CUDAGraph":                true,
	"torch.cuda.graph":                    true,
	"torch.cuda.make_graphed_callables":   true,
	"torch.cuda.graphs.CUDAGraph":         true,
	"torch.cuda.graphs.graph":             true,
	"torch.cuda.graph_pool_handle":        true,
	"torch.cuda.graphs.graph_pool_handle": true,
}

// CudaGraphs reports CUDA graph capture.
var CudaGraphs = &rule.Rule{
	Code:   "PDX009",
	Name:   "cuda-graphs",
	Family: Family,
	Safety: rule.DisplayOnly,
	// Every reported call is a qualified torch.cuda.* name, whose "cuda"
	// component is source text (an import alias spells it too): a name in
	// code, never a string literal, so `\q` (rule.StringStart) is sound; the
	// component is a whole name, so `\b` holds at both ends.
	Needles: []string{`\q\bcuda\b`},
	Example: cudaGraphsExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "CUDA graph capture and replay",
		What:  "Reports `torch.cuda.CUDAGraph`, `torch.cuda.graph(...)`, `make_graphed_callables` and `graph_pool_handle`.",
		Why: "CUDA graphs do not exist on TPU. The equivalent is compiling the captured region with " +
			"`torch.compile(fn, backend=\"tpu\", dynamic=False)`: XLA captures the whole graph, and static shapes keep it " +
			"from recompiling, much as static buffers do for a CUDA graph.",
		Safety: "Diagnostic only: removing the capture restructures the code around the static buffers.",
	}, cudaGraphsExample),
	Run: runCudaGraphs,
}

func runCudaGraphs(p *rule.Pass) {
	kit.Calls(p, func(call *ts.Node) {
		name := kit.CallName(p, call)
		if cudaGraphCalls[name] {
			short := name[strings.LastIndexByte(name, '.')+1:]
			p.Report(kit.Finding(call, "CUDA graphs (`"+short+"`) do not exist on TPU; compile the region with "+
				"torch.compile(backend=\"tpu\", dynamic=False) instead", nil))
		}
	})
}
