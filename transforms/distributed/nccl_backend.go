package distributed

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var ncclBackendExample = rule.Example{
	Before: `import torch.distributed as dist

dist.init_process_group("nccl")
dist.init_process_group(backend="nccl" if use_gpu else "gloo", init_method="env://")
`,
	Portable: `import torch.distributed as dist
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

dist.init_process_group({"cuda": "nccl", "tpu": "tpu_dist"}.get(DEVICE.type, "gloo"))
dist.init_process_group(backend={"cuda": "nccl", "tpu": "tpu_dist"}.get(DEVICE.type, "gloo") if use_gpu else "gloo", init_method="env://")
`,
	TPU: `import torch.distributed as dist

dist.init_process_group("tpu_dist")
dist.init_process_group(backend="tpu_dist" if use_gpu else "gloo", init_method="env://")
`,
}

// NcclBackend rewrites the "nccl" process-group backend.
var NcclBackend = &rule.Rule{
	Code:   "PDS001",
	Name:   "nccl-backend",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `nccl` (see Run).
	Needles: []string{"nccl"},
	Example: ncclBackendExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "The \"nccl\" process-group backend is CUDA-only",
		What: "Finds the string `\"nccl\"` as the backend of `torch.distributed.init_process_group` and `new_group` " +
			"(first argument or `backend=`), as the default of an `add_argument(\"--backend\"...)` / " +
			"`--dist-backend` option, as a `\"backend\"` dict value and as the value assigned to a name containing " +
			"`backend` (also inside `a if c else b`). Portable: " +
			"`{\"cuda\": \"nccl\", \"tpu\": \"tpu_dist\"}.get(DEVICE.type, \"gloo\")`. TPU: `\"tpu_dist\"`.",
		Why: "NCCL needs NVIDIA GPUs. TorchTPU's collective backend is `\"tpu_dist\"`, registered when the tpu " +
			"device is created; gloo is the CPU backend.",
		Safety: "Safe: on a CUDA machine the backend is still NCCL.",
	}, ncclBackendExample),
	Run: runNcclBackend,
}

func runNcclBackend(p *rule.Pass) {
	if !kit.Mentions(p.Src, "nccl") {
		return
	}
	dv := kit.NewDev(p)
	kit.WalkHits(p, []string{"nccl"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment":
			return false
		case "string":
			if s, ok := kit.PlainString(p, n); ok && s == "nccl" && backendContext(p, n) {
				f := rule.Finding{Start: kit.Start(n), End: kit.End(n), Message: "the \"nccl\" backend needs NVIDIA GPUs"}
				if p.Target == rule.TPU {
					q := p.Text(n)[len(p.Text(n))-1:]
					f.Fix = &rule.Fix{Title: `Use the "tpu_dist" backend`, Safety: rule.Safe,
						Edits: []rule.Edit{{Start: kit.Start(n), End: kit.End(n), New: q + "tpu_dist" + q}}}
				} else {
					f.Fix = dv.Fix("Choose the backend by device", rule.Safe, rule.Edit{Start: kit.Start(n), End: kit.End(n),
						New: `{"cuda": "nccl", "tpu": "tpu_dist"}.get(` + dv.Type() + `, "gloo")`})
				}
				kit.Report(p, f)
			}
			return false
		}
		return true
	})
}

func backendName(s string) bool { return strings.Contains(strings.ToLower(s), "backend") }

// backendContext reports whether a "nccl" literal names the process-group
// backend.
func backendContext(p *rule.Pass, n *ts.Node) bool {
	top := n
	for par := top.Parent(); par != nil; par = top.Parent() {
		if par.Type() == "parenthesized_expression" {
			top = par
			continue
		}
		if par.Type() == "conditional_expression" && !(par.NamedChildCount() == 3 && par.NamedChild(1).Equal(top)) {
			top = par
			continue
		}
		break
	}
	par := top.Parent()
	switch par.Type() {
	case "argument_list":
		_, q := kit.Callee(p, par.Parent())
		al, ok := kit.Arguments(p, par.Parent())
		return ok && q == "torch.distributed.init_process_group" && len(al.Positional) > 0 && al.Positional[0].Equal(top)
	case "keyword_argument":
		call := par.Parent().Parent()
		if call == nil || call.Type() != "call" {
			return false
		}
		_, q := kit.Callee(p, call)
		name := p.Text(par.ChildByFieldName("name"))
		switch {
		case name == "backend":
			return q == "torch.distributed.init_process_group" || q == "torch.distributed.new_group"
		case name == "default" && (kit.LastName(p, call) == "add_argument" || kit.LastName(p, call) == "option"):
			al, _ := kit.Arguments(p, call)
			for _, a := range al.Positional {
				if s, ok := kit.PlainString(p, a); ok && backendName(s) {
					return true
				}
			}
		}
	case "pair":
		k, ok := kit.PlainString(p, par.ChildByFieldName("key"))
		return ok && backendName(k) && par.ChildByFieldName("value").Equal(top)
	case "assignment":
		left := par.ChildByFieldName("left")
		if !par.ChildByFieldName("right").Equal(top) {
			return false
		}
		switch left.Type() {
		case "identifier":
			return backendName(p.Text(left))
		case "attribute":
			return backendName(p.Text(left.ChildByFieldName("attribute")))
		}
	case "default_parameter", "typed_default_parameter":
		return backendName(p.Text(par.ChildByFieldName("name")))
	}
	return false
}
