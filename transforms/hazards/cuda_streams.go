package hazards

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaStreamsExample = rule.Example{
	Before: `import torch

side = torch.cuda.Stream()
with torch.cuda.stream(side):
    y = prefetch(batch)
torch.cuda.current_stream().wait_stream(side)
`,
}

var streamCalls = map[string]string{
	"torch.cuda.Stream":         "a CUDA stream",
	"torch.cuda.ExternalStream": "an external CUDA stream",
	"torch.cuda.stream":         "a stream context",
	"torch.cuda.StreamContext":  "a stream context",
	"torch.cuda.current_stream": "the current CUDA stream",
	"torch.cuda.default_stream": "the default CUDA stream",
	"torch.cuda.set_stream":     "switching CUDA streams",
}

var streamMethods = map[string]bool{"wait_stream": true, "wait_event": true, "record_stream": true}

// CudaStreams reports CUDA streams, which are dummies on TPU.
var CudaStreams = &rule.Rule{
	Code:   "PDX003",
	Name:   "cuda-streams",
	Family: Family,
	Safety: rule.DisplayOnly,
	// `\q` (rule.StringStart) is sound: a streamCalls finding is a callee
	// that qualifies to torch.cuda.* (kit.CallName: names in code or an
	// import), and the methods have needles of their own.
	Needles: []string{`\q\bcuda\b`, `\bwait_stream\b`, `\bwait_event\b`, `\brecord_stream\b`},
	Example: cudaStreamsExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "CUDA streams and stream synchronisation",
		What: "Reports `torch.cuda.Stream`, `torch.cuda.stream(...)` contexts, `current_stream`/`default_stream`/`set_stream`, " +
			"and the `.wait_stream`, `.wait_event` and `.record_stream` methods.",
		Why: "Streams are placeholders in TorchTPU and `TpuStreamContext` is non-functional: XLA/PjRt " +
			"orders the work, so the overlap a side stream buys on CUDA does not happen. Keep the code sequential and " +
			"drop the stream plumbing; overlap on TPU comes from `torch.compile(backend=\"tpu\")` and the runtime.",
		Safety: "Diagnostic only: removing a stream changes the structure (the `with` block's body moves out), so a human does it.",
	}, cudaStreamsExample),
	Run: runCudaStreams,
}

func runCudaStreams(p *rule.Pass) {
	kit.Calls(p, func(call *ts.Node) {
		name := kit.CallName(p, call)
		if (name == "torch.cuda.current_stream" || name == "torch.cuda.default_stream") && inStreamMethod(p, call) {
			return // `current_stream().wait_stream(s)`: one finding, on the method
		}
		if what, ok := streamCalls[name]; ok {
			p.Report(kit.Finding(call, what+": CUDA streams are placeholders on TPU and give no overlap; "+
				"keep the code sequential and drop the stream", nil))
			return
		}
		fn := p.Field(call, "function")
		if fn != nil && fn.Type() == "attribute" && streamMethods[p.Text(p.Field(fn, "attribute"))] &&
			len(kit.Positional(kit.Args(call))) == 1 {
			p.Report(kit.Finding(call, "`"+p.Text(p.Field(fn, "attribute"))+"`: stream synchronisation is a no-op on TPU "+
				"(XLA orders execution); drop it together with the stream", nil))
		}
	})
}

// inStreamMethod reports whether call is the receiver or an argument of a
// wait_stream/wait_event/record_stream call.
func inStreamMethod(p *rule.Pass, call *ts.Node) bool {
	for n := p.Parent(call); n != nil; n = p.Parent(n) {
		switch n.Type() {
		case "attribute", "argument_list":
			continue
		case "call":
			fn := p.Field(n, "function")
			return fn != nil && fn.Type() == "attribute" && streamMethods[p.Text(p.Field(fn, "attribute"))]
		}
		return false
	}
	return false
}
