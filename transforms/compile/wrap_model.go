package compile

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var wrapModelExample = rule.Example{
	Before: `import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x * 2


if __name__ == "__main__":
    model = Net().to(device)
`,
	Portable: `import torch
from torch import nn

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


class Net(nn.Module):
    def forward(self, x):
        return x * 2


if __name__ == "__main__":
    model = torch.compile(Net().to(device), backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))
`,
	TPU: `import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x * 2


if __name__ == "__main__":
    model = torch.compile(Net().to(device), backend="tpu", dynamic=False)
`,
}

// wrapModelNeedles: a candidate is in an entry script (__main__, argparse,
// or calls of attributes named backward and step, so `\(` holds) and
// builds a local class whose base is
// qualified as torch.nn.* (the import or the base spells the word nn:
// `from torch import nn`, `torch.nn.Module`, `from torch.nn import Linear
// as L`) or a torchvision.models constructor.
var wrapModelNeedles = func() []string {
	var out []string
	for _, entry := range []string{"__main__", `\bargparse\b`, `\bbackward\( & \bstep\(`} {
		for _, model := range []string{`\bclass\b & \bnn\b`, `\btorchvision\b`} {
			out = append(out, entry+" & "+model)
		}
	}
	return out
}()

// WrapModel compiles an uncompiled nn.Module model (opt-in).
var WrapModel = &rule.Rule{
	Code:    "PCM002",
	Name:    "compile-wrap-model",
	Family:  Family,
	Safety:  rule.Unsafe,
	Needles: wrapModelNeedles,
	Example: wrapModelExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Uncompiled nn.Module model (opt-in: wrap it in torch.compile)",
		What: "Wraps `name = Net(...)` (optionally followed by `.to(...)`, `.cuda()`, `.eval()`, `.train()`, " +
			"`.half()`, `.float()`, `.bfloat16()`) in `torch.compile(..., backend=..., dynamic=...)`, where `Net` is a " +
			"class of the module that derives from `nn.Module` or a `torchvision.models` constructor, in an entry script: " +
			"a module that runs under `if __name__ == \"__main__\":`, imports argparse, or trains (calls `.backward()` and " +
			"`.step()`). A model class a library defines is not a site: the program that builds and trains it is. A name that the " +
			"module already passes to `torch.compile` (or calls `.compile()` on) is never wrapped, and neither is a " +
			"call that is already compiled, so a second run changes nothing. When the module did not compile before, " +
			"the same fix also turns its `torch.inference_mode` into `torch.no_grad` (see PCM003).",
		Why: "On TPU, eager execution dispatches one op at a time; compiling the model with `backend=\"tpu\"` lets XLA " +
			"fuse the whole graph, and it is what TorchTPU recommends for training and inference.",
		Safety: "Unsafe, so it runs only with `--unsafe-fixes`: a compiled module is an `OptimizedModule`, so " +
			"`state_dict()` keys gain an `_orig_mod.` prefix (checkpoints written after the change do not load into " +
			"the plain class), `isinstance(model, Net)` becomes False, the first call compiles for minutes, data-" +
			"dependent Python control flow causes graph breaks or recompiles, and shapes must be static.",
	}, wrapModelExample),
	OptIn: true,
	Run:   runWrapModel,
}

// selfReturning are nn.Module methods that return the module itself.
var selfReturning = map[string]bool{
	"to": true, "cuda": true, "eval": true, "train": true, "half": true, "float": true, "bfloat16": true,
	"double": true, "requires_grad_": true, "cpu": true,
}

// moduleClasses returns the names of the module's classes that derive,
// directly or through other local classes, from torch.nn.Module.
func moduleClasses(p *rule.Pass) map[string]bool {
	bases := map[string][]*ts.Node{}
	var order []string
	kit.Nodes(p, "class_definition", func(c *ts.Node) {
		name := p.Text(c.ChildByFieldName("name"))
		order = append(order, name)
		if sc := c.ChildByFieldName("superclasses"); sc != nil {
			bases[name] = append(bases[name], kit.Positional(sc)...)
		}
	})
	out := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, name := range order {
			if out[name] {
				continue
			}
			for _, b := range bases[name] {
				q := kit.Qualified(p, b)
				if q == "torch.nn.Module" || strings.HasPrefix(q, "torch.nn.") && isUpper(q[len("torch.nn."):]) || out[p.Text(b)] {
					out[name] = true
					changed = true
					break
				}
			}
		}
	}
	return out
}

func isUpper(s string) bool {
	return s != "" && s[0] >= 'A' && s[0] <= 'Z' && !strings.Contains(s, ".")
}

// compiledNames are names the module passes to torch.compile or calls
// .compile() on: they must not be wrapped again.
func compiledNames(p *rule.Pass) map[string]bool {
	out := map[string]bool{}
	kit.Calls(p, func(call *ts.Node) {
		fn := call.ChildByFieldName("function")
		if kit.CallName(p, call) == "torch.compile" {
			if pos := kit.Positional(kit.Args(call)); len(pos) > 0 {
				head, _, _ := strings.Cut(kit.Dotted(p, pos[0]), ".")
				out[head] = true
			}
			return
		}
		if fn != nil && fn.Type() == "attribute" && p.Text(fn.ChildByFieldName("attribute")) == "compile" {
			head, _, _ := strings.Cut(kit.Dotted(p, fn.ChildByFieldName("object")), ".")
			out[head] = true
		}
	})
	return out
}

// isModelConstruction reports whether rhs builds a model: Cls(...) for a
// local nn.Module class or a torchvision.models constructor, followed by
// self-returning method calls.
func isModelConstruction(p *rule.Pass, rhs *ts.Node, classes map[string]bool) bool {
	n := rhs
	for n.Type() == "call" {
		fn := n.ChildByFieldName("function")
		if fn == nil {
			return false
		}
		if fn.Type() == "attribute" && selfReturning[p.Text(fn.ChildByFieldName("attribute"))] {
			obj := fn.ChildByFieldName("object")
			if obj.Type() == "call" {
				n = obj
				continue
			}
			return false
		}
		if fn.Type() == "identifier" && classes[p.Text(fn)] {
			return true
		}
		q := kit.Qualified(p, fn)
		return strings.HasPrefix(q, "torchvision.models.") && !strings.Contains(q[len("torchvision.models."):], ".")
	}
	return false
}

// wrapCandidates returns the assignments PCM002 would wrap. PCM002, PCM003
// and PDX005 all ask, so the answer is computed once per file.
func wrapCandidates(p *rule.Pass) []*ts.Node {
	return p.Memo("compile.wrapCandidates", func() any { return findWrapCandidates(p) }).([]*ts.Node)
}

func findWrapCandidates(p *rule.Pass) []*ts.Node {
	if !entryScript(p) {
		return nil // a library's model is compiled where a program builds it
	}
	classes := moduleClasses(p)
	done := compiledNames(p)
	var out []*ts.Node
	kit.Nodes(p, "assignment", func(a *ts.Node) {
		left, right := a.ChildByFieldName("left"), a.ChildByFieldName("right")
		if left == nil || right == nil || left.Type() != "identifier" || a.ChildByFieldName("type") != nil {
			return
		}
		if st := a.Parent(); st == nil || st.Type() != "expression_statement" || kit.EnclosingStatement(a) == nil || !kit.EnclosingStatement(a).Equal(st) {
			return
		}
		if done[p.Text(left)] || !isModelConstruction(p, right, classes) {
			return
		}
		out = append(out, a)
	})
	return out
}

// entryScript reports whether the module is a program rather than a
// library: it has an `if __name__ == "__main__":` block, imports argparse,
// or trains (calls some `.backward()` and some `.step()`).
func entryScript(p *rule.Pass) bool {
	for _, m := range p.Imports.Modules {
		if m == "argparse" {
			return true
		}
	}
	for _, n := range p.Imports.Names {
		if strings.HasPrefix(n, "argparse.") {
			return true
		}
	}
	main := false
	kit.Nodes(p, "if_statement", func(n *ts.Node) {
		switch strings.Join(strings.Fields(p.Text(n.ChildByFieldName("condition"))), "") {
		case `__name__=="__main__"`, `__name__=='__main__'`, `"__main__"==__name__`, `'__main__'==__name__`:
			main = true
		}
	})
	if main {
		return true
	}
	backward, step := false, false
	kit.Calls(p, func(call *ts.Node) {
		if fn := call.ChildByFieldName("function"); fn != nil && fn.Type() == "attribute" {
			switch p.Text(fn.ChildByFieldName("attribute")) {
			case "backward":
				backward = true
			case "step":
				step = true
			}
		}
	})
	return backward && step
}

// WillCompile reports whether the module uses torch.compile, or would once
// PCM002 (compile-wrap-model) wraps one of its models. Rules whose findings
// depend on compile use it so that a run with --unsafe-fixes reaches its
// fixed point in one pass.
func WillCompile(p *rule.Pass) bool {
	return kit.UsesCompile(p) || len(wrapCandidates(p)) > 0
}

func runWrapModel(p *rule.Pass) {
	compiles := kit.UsesCompile(p)
	dev := kit.NewDev(p)
	for i, a := range wrapCandidates(p) {
		left, right := a.ChildByFieldName("left"), a.ChildByFieldName("right")
		name := p.Text(left)
		kws := compileKwargs(p.Target, dev)
		edits := []rule.Edit{
			{Start: kit.Start(right), End: kit.Start(right), New: torchName(p) + ".compile("},
			{Start: kit.End(right), End: kit.End(right), New: ", " + strings.Join(kws, ", ") + ")"},
		}
		var imports []string
		if i == 0 && !compiles {
			// The module starts compiling now: its inference_mode must go too,
			// or a second run would find it (PCM003).
			for _, s := range inferenceModeSites(p) {
				edits = append(edits, s.fix...)
				if s.fix != nil {
					imports = append(imports, s.imp)
				}
			}
		}
		fix := fixFor(dev, "Wrap the model in torch.compile", rule.Unsafe, edits, p.Target == rule.Portable)
		fix.Imports = append(fix.Imports, imports...)
		p.Report(kit.Finding(right, "`"+name+"` is an uncompiled nn.Module; on TPU compile it with "+
			"torch.compile(backend=\"tpu\", dynamic=False) (opt-in: changes state_dict keys and first-call latency)", fix))
	}
}
