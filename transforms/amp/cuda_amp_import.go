package amp

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaAmpImportExample = rule.Example{
	Before: `from torch.cuda.amp import GradScaler, autocast

scaler = GradScaler()
with autocast():
    loss = model(x)
`,
	Portable: `from torch.amp import GradScaler, autocast
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

scaler = GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
with autocast(DEVICE.type, enabled=DEVICE.type != "cpu"):
    loss = model(x)
`,
	TPU: `from torch.amp import GradScaler, autocast
import torch

scaler = GradScaler("tpu", enabled=False)
with autocast("tpu", dtype=torch.bfloat16):
    loss = model(x)
`,
}

// CudaAmpImport rewrites `from torch.cuda.amp import ...` with its uses.
var CudaAmpImport = &rule.Rule{
	Code:   "PAM004",
	Name:   "cuda-amp-import",
	Family: Family,
	Safety: rule.Safe,
	// The rule reports only at the import statements it finds by these two
	// texts (see Run).
	Needles: []string{"torch.cuda.amp import", "torch.cuda import"},
	Example: cudaAmpImportExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`from torch.cuda.amp import autocast, GradScaler`",
		What: "Rewrites `from torch.cuda.amp import ...` to `from torch.amp import ...` (and " +
			"`from torch.cuda import amp` to `from torch import amp`) together with every use of the imported " +
			"names, in one fix: `autocast(...)` and `GradScaler(...)` calls get the device type as cuda-amp-autocast " +
			"(PAM001) and cuda-grad-scaler (PAM003) give it, `custom_fwd`/`custom_bwd` get `device_type=`. " +
			"When a name is used other than as a call (passed around as a value), the import is reported and " +
			"left for a human.",
		Why: "`torch.amp.autocast` needs a device type that `torch.cuda.amp.autocast` did not take, so the import " +
			"and its call sites must change together: either alone leaves broken code.",
		Safety: "Safe as its parts are (see PAM001 and PAM003): unsafe on the tpu target when an fp16 dtype becomes " +
			"bf16 or a scaler is disabled in a module that uses float16.",
	}, cudaAmpImportExample),
	Run: runCudaAmpImport,
}

var ampNames = map[string]bool{"autocast": true, "GradScaler": true, "custom_fwd": true, "custom_bwd": true}

func runCudaAmpImport(p *rule.Pass) {
	if !kit.Mentions(p.Src, "torch.cuda") {
		return
	}
	dv := kit.NewDev(p)
	kit.WalkHits(p, []string{"torch.cuda.amp import", "torch.cuda import"}, func(n *ts.Node) bool {
		if n.Type() != "import_from_statement" {
			return n.Type() != "string" && n.Type() != "comment"
		}
		mod := n.ChildByFieldName("module_name")
		locals := map[string]string{} // local name -> imported name
		var order []string            // the local names in import order: the report does not depend on map order
		for i := 0; i < int(n.ChildCount()); i++ {
			c := n.Child(i)
			if n.FieldNameForChild(i) != "name" {
				continue
			}
			name, local := c, c
			if c.Type() == "aliased_import" {
				name, local = c.ChildByFieldName("name"), c.ChildByFieldName("alias")
			}
			if _, dup := locals[p.Text(local)]; !dup {
				order = append(order, p.Text(local))
			}
			locals[p.Text(local)] = p.Text(name)
		}
		var newMod string
		switch p.Text(mod) {
		case "torch.cuda.amp":
			newMod = "torch.amp"
			for _, local := range order {
				if name := locals[local]; !ampNames[name] {
					report(p, n, "imports "+name+" from torch.cuda.amp, which has no torch.amp counterpart here", nil)
					return false
				}
			}
		case "torch.cuda":
			if len(locals) != 1 {
				return false
			}
			for _, name := range locals {
				if name != "amp" {
					return false
				}
			}
			newMod = "torch"
		default:
			return false
		}
		pl := &plan{}
		pl.add(rule.Edit{Start: kit.Start(mod), End: kit.End(mod), New: newMod})
		for _, local := range order {
			if bad := planUses(p, dv, pl, n, local, locals[local]); bad != "" {
				report(p, n, bad, nil)
				return false
			}
		}
		report(p, n, "torch.cuda.amp is CUDA-only and deprecated"+pl.note, fixOf(p, dv, "Import from torch.amp and pass the device type", pl))
		return false
	})
}

func report(p *rule.Pass, n *ts.Node, msg string, f *rule.Fix) {
	kit.Report(p, rule.Finding{Start: kit.Start(n), End: kit.End(n), Message: msg, Fix: f})
}

// planUses adds the edits for every use of local (bound to torch.cuda.amp's
// name, or to the torch.cuda.amp module when name is "amp"). It returns why
// a use cannot be rewritten, or "".
func planUses(p *rule.Pass, dv *kit.Dev, pl *plan, imp *ts.Node, local, name string) string {
	bad := ""
	kit.WalkHits(p, []string{local}, func(n *ts.Node) bool {
		if bad != "" {
			return false
		}
		switch n.Type() {
		case "import_from_statement", "import_statement", "string", "comment":
			return false
		case "identifier":
		default:
			return true
		}
		if p.Text(n) != local {
			return false
		}
		par := n.Parent()
		if par.Type() == "attribute" && par.ChildByFieldName("attribute").Equal(n) {
			return false // x.autocast: another object's attribute
		}
		if par.Type() == "keyword_argument" && par.ChildByFieldName("name").Equal(n) {
			return false
		}
		use, member := n, name
		if name == "amp" {
			if par.Type() != "attribute" || !par.ChildByFieldName("object").Equal(n) {
				bad = "`" + local + "` (torch.cuda.amp) is used other than as `" + local + ".name(...)`"
				return false
			}
			use, member = par, p.Text(par.ChildByFieldName("attribute"))
			if !ampNames[member] {
				bad = "`" + p.Text(par) + "` has no torch.amp counterpart here"
				return false
			}
		}
		if msg := planUse(p, dv, pl, use, member); msg != "" {
			bad = msg
		}
		return false
	})
	return bad
}

// planUse plans one use of an amp name: a call, or a bare decorator.
func planUse(p *rule.Pass, dv *kit.Dev, pl *plan, use *ts.Node, member string) string {
	par := use.Parent()
	dt := devType(p, dv)
	if (member == "custom_fwd" || member == "custom_bwd") && par.Type() == "decorator" {
		pl.add(rule.Edit{Start: kit.End(use), End: kit.End(use), New: "(device_type=" + dt + ")"})
		return ""
	}
	call, al, partial, ok := useCall(p, use)
	if call == nil {
		return "`" + p.Text(use) + "` is used other than as a call; rewrite it by hand (torch.amp needs a device type)"
	}
	if !ok || al.Splat {
		return "`" + p.Text(call) + "` has arguments pallasify cannot rewrite"
	}
	switch member {
	case "autocast":
		sub, ok := cudaAutocast(p, dv, al)
		if !ok {
			return "`" + p.Text(call) + "` has arguments pallasify cannot rewrite"
		}
		if partial {
			sub.unsafe(partialNote)
		}
		merge(pl, sub)
	case "GradScaler":
		if len(al.Positional) >= 5 || partial {
			return "`" + p.Text(call) + "` passes enabled positionally, or through functools.partial"
		}
		merge(pl, scaler(p, dv, al, nil))
	default:
		pl.add(al.InsertFirst("device_type=" + dt))
	}
	return ""
}

// partialNote is why an autocast reached through functools.partial is an
// unsafe fix: the partial's own callers may pass more positional arguments,
// and torch.cuda.amp.autocast's first parameter is enabled where
// torch.amp.autocast's is the device type.
const partialNote = "; through functools.partial: a positional argument where the partial is called would " +
	"bind to torch.amp.autocast's device_type or dtype instead of enabled (pass keywords there)"

// useCall returns the call that invokes use: use(...) itself, or
// functools.partial(use, ...) (partial true; al holds the arguments partial
// binds, see kit.Through). call is nil for any other use.
func useCall(p *rule.Pass, use *ts.Node) (call *ts.Node, al kit.ArgList, partial, ok bool) {
	par := use.Parent()
	if par.Type() == "call" && par.ChildByFieldName("function").Equal(use) {
		al, ok = kit.Arguments(p, par)
		return par, al, false, ok
	}
	if par.Type() == "argument_list" && par.Parent() != nil && par.Parent().Type() == "call" {
		if fn, _, al, partial, ok := kit.Through(p, par.Parent()); partial && fn.Equal(use) {
			return par.Parent(), al, true, ok
		}
	}
	return nil, kit.ArgList{}, false, false
}

func merge(pl, sub *plan) {
	pl.add(sub.edits...)
	if sub.safety == rule.Unsafe && pl.safety != rule.Unsafe {
		pl.unsafe(sub.note)
	}
}
