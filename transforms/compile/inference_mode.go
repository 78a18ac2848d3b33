package compile

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var inferenceModeExample = rule.Example{
	Before: `import torch

model = torch.compile(model, backend="tpu", dynamic=False)


@torch.inference_mode()
def predict(x):
    return model(x)
`,
	Portable: `import torch

model = torch.compile(model, backend="tpu", dynamic=False)


@torch.no_grad()
def predict(x):
    return model(x)
`,
	TPU: `import torch

model = torch.compile(model, backend="tpu", dynamic=False)


@torch.no_grad()
def predict(x):
    return model(x)
`,
}

// InferenceMode rewrites torch.inference_mode to torch.no_grad in modules
// inferenceModeNeedles: inference_mode, in a module that compiles (PCM001's
// needles) or that PCM002 would make compile (its needles).
var inferenceModeNeedles = func() []string {
	var out []string
	for _, c := range append(append([]string(nil), tpuSettingsNeedles...), wrapModelNeedles...) {
		out = append(out, `inference_mode & `+c)
	}
	return out
}()

// that compile.
var InferenceMode = &rule.Rule{
	Code:    "PCM003",
	Name:    "inference-mode-under-compile",
	Family:  Family,
	Safety:  rule.Safe,
	Needles: inferenceModeNeedles,
	Example: inferenceModeExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "torch.inference_mode in a module that uses torch.compile",
		What: "In a module that calls `torch.compile`, rewrites `@torch.inference_mode()` / `@torch.inference_mode` " +
			"decorators and `with torch.inference_mode():` blocks to `torch.no_grad()`. Calls with a computed `mode` " +
			"argument are reported without a fix; `inference_mode(False)` is left alone.",
		Why: "`torch.inference_mode` combined with `torch.compile` crashes on TorchTPU; the documented fix is " +
			"`torch.no_grad()` (TorchTPU's error glossary). The rule applies to both targets because portable code must " +
			"also run on TPU.",
		Safety: "Safe: `no_grad` disables gradient tracking exactly like `inference_mode`; it only skips inference " +
			"mode's extra bookkeeping savings, so results are identical. Code that asks `tensor.is_inference()` or " +
			"relies on inference tensors raising when later used in autograd would notice; such code is rare. " +
			"Modules that use the model only through another module that compiles it are not seen (one file at a time).",
	}, inferenceModeExample),
	Run: runInferenceMode,
}

// inferenceSite is one inference_mode use and its replacement (nil fix: only reported).
type inferenceSite struct {
	node *ts.Node
	fix  []rule.Edit
	imp  string
}

// inferenceModeSites finds the inference_mode uses of a module.
func inferenceModeSites(p *rule.Pass) []inferenceSite {
	var out []inferenceSite
	replacement := func(n *ts.Node) (string, string) {
		// Keep the module's style: torch.no_grad() or a from-imported no_grad().
		if f := n; f.Type() == "identifier" {
			return "no_grad()", "from torch import no_grad"
		}
		return torchName(p) + ".no_grad()", "import torch"
	}
	consider := func(n, callee *ts.Node, args *ts.Node) {
		if args != nil {
			pos := kit.Positional(args)
			var mode *ts.Node
			if len(pos) == 1 {
				mode = pos[0]
			} else if v := kit.KwargValue(p, args, "mode"); v != nil {
				mode = v
			}
			if kit.HasSplat(args) || len(pos) > 1 {
				out = append(out, inferenceSite{node: n})
				return
			}
			if mode != nil {
				if b, lit := kit.Bool(mode); lit && !b {
					return // inference mode disabled: nothing to do
				} else if !lit {
					out = append(out, inferenceSite{node: n})
					return
				}
			}
		}
		text, imp := replacement(callee)
		out = append(out, inferenceSite{node: n, fix: []rule.Edit{{Start: kit.Start(n), End: kit.End(n), New: text}}, imp: imp})
	}
	kit.Calls(p, func(call *ts.Node) {
		if kit.CallName(p, call) == "torch.inference_mode" || kit.CallName(p, call) == "torch.autograd.grad_mode.inference_mode" {
			consider(call, call.ChildByFieldName("function"), kit.Args(call))
		}
	})
	kit.Nodes(p, "decorator", func(d *ts.Node) {
		for _, c := range ts.Children(d) {
			if c.Type() != "call" && kit.Qualified(p, c) == "torch.inference_mode" {
				consider(c, c, nil)
			}
		}
	})
	return out
}

const inferenceModeMessage = "torch.inference_mode combined with torch.compile crashes on TorchTPU; use torch.no_grad()"

func runInferenceMode(p *rule.Pass) {
	compiles := kit.UsesCompile(p)
	if !compiles && !WillCompile(p) {
		return
	}
	for _, s := range inferenceModeSites(p) {
		if !compiles {
			// Only PCM002 would make the module compile; its fix carries the
			// rewrites, and only the sites it cannot rewrite are reported.
			if s.fix == nil {
				p.Report(kit.Finding(s.node, inferenceModeMessage+" (once PCM002 compiles this module's model); "+
					"the mode argument is computed, so rewrite it by hand", nil))
			}
			continue
		}
		if s.fix == nil {
			p.Report(kit.Finding(s.node, inferenceModeMessage+"; the mode argument is computed, so rewrite it by hand", nil))
			continue
		}
		p.Report(kit.Finding(s.node, inferenceModeMessage,
			&rule.Fix{Title: "Use torch.no_grad()", Safety: rule.Safe, Edits: s.fix, Imports: []string{s.imp}}))
	}
}
