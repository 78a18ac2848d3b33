package tpuperf

import (
	"github.com/pallasify/pallasify/transforms/compile"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var varyingShapesExample = rule.Example{
	Before: `import torch
from torch.utils.data import DataLoader

model = torch.compile(Net(), backend="tpu", dynamic=False)
loader = DataLoader(dataset, batch_size=64, shuffle=True)
`,
}

// dataLoaders are the qualified names of torch's DataLoader.
var dataLoaders = map[string]bool{
	"torch.utils.data.DataLoader":            true,
	"torch.utils.data.dataloader.DataLoader": true,
}

// VaryingShapes reports batches whose shape changes from step to step in a
// module that compiles.
var VaryingShapes = &rule.Rule{
	Code:   "PTP002",
	Name:   "compile-varying-shapes",
	Family: Family,
	Safety: rule.DisplayOnly,
	// Every finding is a call of DataLoader (its name is in the call or in
	// the import that binds it), of pad_sequence (likewise), or a call with
	// a `padding=` keyword argument.
	Needles: []string{"DataLoader", "pad_sequence", `\bpadding\=`},
	Example: varyingShapesExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Batch shapes that change from step to step in a module that uses torch.compile",
		What: "In a module that calls `torch.compile` (or whose model the opt-in PCM002 would compile), reports: " +
			"a `torch.utils.data.DataLoader` that batches (`batch_size` not `None` or `1`, no `batch_sampler`) " +
			"without `drop_last=True` (a computed `drop_last`, or `**kwargs` that may carry it, is left alone); " +
			"`torch.nn.utils.rnn.pad_sequence(...)`, which pads to the longest sequence of each batch; and a " +
			"tokenizer-style call with `padding=True` or `padding=\"longest\"` and no `pad_to_multiple_of`.",
		Why: "TorchTPU compiles a graph for static shapes: `torch.compile(backend=\"tpu\")` needs `dynamic=False`, " +
			"and every new input shape compiles a new graph, which takes seconds to minutes. A DataLoader without " +
			"`drop_last=True` ends each epoch with a smaller batch (one recompile per epoch, and one more graph held " +
			"in memory); padding to the longest sequence of a batch gives a new sequence length almost every " +
			"step, so the step recompiles again and again. For training, pass `drop_last=True`; for evaluation, " +
			"where every sample counts, pad the last batch to the full batch size and mask the padded rows instead. " +
			"For sequences, pad to a fixed length (`padding=\"max_length\", max_length=N`) or to a few bucket " +
			"lengths (`pad_to_multiple_of=128` bounds the number of shapes), so only a handful of graphs exist.",
		Safety: "Diagnostic only: dropping the last batch changes what an epoch sees, and padding changes memory " +
			"and may need attention masks; which loader feeds the compiled model, and whether it trains or " +
			"evaluates, is for a person to decide. Loaders in modules that do not compile are not reported (one " +
			"file at a time).",
	}, varyingShapesExample),
	Run: runVaryingShapes,
}

func runVaryingShapes(p *rule.Pass) {
	if !compile.WillCompile(p) {
		return
	}
	kit.Calls(p, func(call *ts.Node) {
		name := kit.CallName(p, call)
		al, ok := kit.Arguments(p, call)
		if !ok {
			return
		}
		switch {
		case dataLoaders[name]:
			if msg := loaderMessage(p, al); msg != "" {
				p.Report(kit.Finding(call, msg, nil))
			}
		case name == "torch.nn.utils.rnn.pad_sequence":
			p.Report(kit.Finding(call, "pad_sequence pads each batch to its longest sequence, so the sequence length "+
				"changes from step to step and the compiled TPU graph recompiles for each new length; pad to a fixed "+
				"length or to a few bucket lengths (multiples of 128)", nil))
		default:
			v := al.KwValue("padding")
			if v == nil || al.Keywords["pad_to_multiple_of"] != nil || al.Splat {
				return
			}
			if b, lit := kit.Bool(v); lit && b {
				p.Report(kit.Finding(call, "padding=True pads to the longest sequence of each batch, so the compiled TPU "+
					"graph recompiles for each new length; pass padding=\"max_length\" with a max_length, or "+
					"pad_to_multiple_of=128 to bound the number of shapes", nil))
			} else if s, ok := kit.PlainString(p, v); ok && s == "longest" {
				p.Report(kit.Finding(call, "padding=\"longest\" pads to the longest sequence of each batch, so the compiled "+
					"TPU graph recompiles for each new length; pass padding=\"max_length\" with a max_length, or "+
					"pad_to_multiple_of=128 to bound the number of shapes", nil))
			}
		}
	})
}

// loaderMessage is the finding for a DataLoader call whose last batch may
// be smaller than the others, or "".
func loaderMessage(p *rule.Pass, al kit.ArgList) string {
	if al.Keywords["batch_sampler"] != nil {
		return "" // the sampler decides the batches
	}
	// DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, ...)
	if len(al.Positional) >= 5 {
		return ""
	}
	bs := al.KwValue("batch_size")
	if bs == nil && len(al.Positional) >= 2 {
		bs = al.Positional[1]
	}
	if bs == nil || kit.IsNone(bs) {
		// batch_size defaults to 1 (every batch has one sample), or
		// **kwargs may carry it, or None turns batching off.
		return ""
	}
	if n, ok := kit.Int(p, bs); ok && n <= 1 {
		return ""
	}
	dl := al.KwValue("drop_last")
	if dl == nil {
		if al.Splat {
			return "" // **kwargs may carry drop_last
		}
		return "DataLoader without drop_last=True: the last batch of an epoch is smaller, so the compiled TPU graph " +
			"recompiles for it; pass drop_last=True for training, or pad the last batch to the full size (and mask " +
			"it) for evaluation"
	}
	if b, lit := kit.Bool(dl); lit && !b {
		return "DataLoader with drop_last=False: the last batch of an epoch is smaller, so the compiled TPU graph " +
			"recompiles for it; pass drop_last=True for training, or pad the last batch to the full size (and mask " +
			"it) for evaluation"
	}
	return ""
}
