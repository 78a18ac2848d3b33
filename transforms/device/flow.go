package device

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaDeviceVariableExample = rule.Example{
	Before: `import torch


def setup(rank):
    d = "cuda"
    name = "cuda:{}".format(rank)
    x = torch.zeros(3, device=d)
    return x.to(name)
`,
	Portable: `import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


def setup(rank):
    d = DEVICE.type
    name = str(device_at(rank))
    x = torch.zeros(3, device=d)
    return x.to(name)
`,
	TPU: `import torch


def setup(rank):
    d = "tpu"
    name = "tpu"
    x = torch.zeros(3, device=d)
    return x.to(name)
`,
}

// CudaDeviceVariable rewrites a CUDA device string that reaches a device
// argument through a variable.
var CudaDeviceVariable = &rule.Rule{
	Code:   "PDV006",
	Name:   "cuda-device-variable",
	Family: Family,
	Safety: rule.Safe,
	// siteNeedles, and `}:{ & cuda` for f"{device_type}:{local_rank}" whose
	// type comes from elsewhere (the rule returns at once on a file without
	// `cuda`, see Run; the f-string is found by its `}:{`).
	Needles: append(append([]string(nil), siteNeedles...), "}:{ & cuda"),
	Example: cudaDeviceVariableExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "CUDA device string reaching a device argument through a variable",
		What: "Follows a CUDA device string (`\"cuda\"`, `\"cuda:N\"`, `f\"cuda:{i}\"`, `\"cuda:{}\".format(i)`, " +
			"`\"cuda:%d\" % i`) assigned to a name that does not say it is a device (`d`, `name`, `target`; names " +
			"containing `device` are cuda-device-default's, PDV004) to where the name is read in the same " +
			"function (or module): as a device argument (`device=`, `.to(...)`, `torch.device(...)`, " +
			"`map_location=`, `torch.set_default_device`, `pin_memory_device=`, `torch.autocast`'s device type). " +
			"Where every read of the name is such an argument and it is assigned once, the string is rewritten " +
			"where it is assigned, as cuda-device-default (PDV004) rewrites a default: portable `DEVICE.type` " +
			"(`str(device_at(i))` with an index), tpu `\"tpu\"`. Otherwise (the name is also compared, used as a " +
			"key, logged, reassigned) the site is reported without a fix.\n\n" +
			"Also `f\"{device_type}:{local_rank}\"` where `device_type` is assigned `\"cuda\"` once in the same " +
			"function or module and either names a device or the string reaches a device argument: portable `str(device_at(local_rank))`, tpu `device_type` alone (each process " +
			"sees its one chip as `tpu:0`; `\"tpu:<rank>\"` does not exist). Where the device type comes from " +
			"elsewhere (`device_type, *idx = device.split(\":\")` of an argument), the same f-string is reported " +
			"without a fix: on a TPU host it builds `tpu:<rank>`.\n\n" +
			"A string that only names an implementation or a label (`impl = \"cuda\"` compared with " +
			"`impl == \"cuda\"`, a kernel table's key) never reaches a device argument and is left alone.",
		Why: "The value is a device all the same: `torch.zeros(3, device=d)` with `d = \"cuda\"` fails on a " +
			"machine without CUDA exactly as `device=\"cuda\"` does.",
		Safety: "Safe: the value stays a `str` and, on CUDA, the same string. On the tpu target an index that is " +
			"not per-process (see cuda-device-string, PDV001) makes the fix unsafe.",
	}, cudaDeviceVariableExample),
	Run: runCudaDeviceVariable,
}

func runCudaDeviceVariable(p *rule.Pass) {
	if !kit.Mentions(p.Src, "cuda") {
		return
	}
	dv := kit.NewDev(p)
	seen := map[int]bool{}
	visit := func(s kit.Str) {
		if seen[kit.Start(s.Node)] {
			return
		}
		seen[kit.Start(s.Node)] = true
		if _, ok := classify(p, s); ok {
			return // a device site of PDV001/PDV004
		}
		asg, name := assignedTo(p, s.Node)
		if asg == nil {
			return
		}
		devUses, other := readsOf(p, asg, name)
		if len(devUses) == 0 {
			return // never reaches a device argument: a label, an implementation name
		}
		at := line(p, devUses[0])
		f := rule.Finding{Start: kit.Start(s.Node), End: kit.End(s.Node),
			Message: "CUDA device string assigned to `" + name + "`, a device argument at line " + strconv.Itoa(at)}
		if other != nil {
			f.Message += "; `" + name + "` is also used otherwise (line " + strconv.Itoa(line(p, other)) + "): rewrite it by hand"
		} else {
			fx, note := fix(p, dv, site{s: s, use: useString, context: "a device variable"})
			f.Fix, f.Message = fx, f.Message+note
		}
		kit.Report(p, f)
	}
	if bytes.Contains(p.Src, []byte("}:{")) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "comment" {
				return false
			}
			if n.Type() != "string" {
				return true
			}
			if s, idx, ok := typedIndex(p, n); ok {
				reportTypedIndex(p, dv, s, idx)
			} else if t, idx, ok := typeIndexShape(p, n); ok && kit.DeviceName(t) && strings.Contains(strings.ToLower(t), "type") {
				// f"{device_type}:{local_rank}" where the type comes from
				// elsewhere (a parsed argument): it is "tpu" on a TPU host,
				// where "tpu:<rank>" does not exist.
				kit.Report(p, rule.Finding{Start: kit.Start(n), End: kit.End(n),
					Message: "`" + p.Text(n) + "` builds a device from a device type and an index: on a TPU host each " +
						"process has one chip, `tpu:0`, so `tpu:" + idx + "` does not exist there; use the device type alone " +
						"(or index 0) when it is \"tpu\""})
			}
			return false
		})
	}
	kit.WalkHits(p, []string{"cuda"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment":
			return false
		case "call", "binary_operator":
			if s, ok := kit.FormattedDevice(p, n); ok {
				visit(s)
				return false
			}
		case "string":
			if s, ok := kit.DeviceString(p, n); ok {
				visit(s)
				return false
			}
		}
		return true
	})
}

// assignedTo returns the assignment `name = <n>` whose whole right side is n
// (through parentheses), and the name.
func assignedTo(p *rule.Pass, n *ts.Node) (*ts.Node, string) {
	top := n
	for top.Parent() != nil && top.Parent().Type() == "parenthesized_expression" {
		top = top.Parent()
	}
	asg := top.Parent()
	if asg == nil || asg.Type() != "assignment" || !asg.ChildByFieldName("right").Equal(top) {
		return nil, ""
	}
	left := asg.ChildByFieldName("left")
	if left == nil || left.Type() != "identifier" {
		return nil, ""
	}
	if st := asg.Parent(); st == nil || st.Type() != "expression_statement" {
		return nil, ""
	}
	return asg, p.Text(left)
}

// scopeOf is the function whose body holds n, or the module.
func scopeOf(n *ts.Node) *ts.Node {
	for x := n.Parent(); x != nil; x = x.Parent() {
		switch x.Type() {
		case "function_definition", "lambda", "class_definition", "module":
			return x
		}
	}
	return nil
}

// readsOf splits the other occurrences of name in asg's scope (nested
// functions included) into reads as a device argument and the first other
// one (a read elsewhere, a second assignment, a parameter of that name, a
// global declaration).
func readsOf(p *rule.Pass, asg *ts.Node, name string) (dev []*ts.Node, other *ts.Node) {
	scope := scopeOf(asg)
	if scope == nil {
		return nil, asg
	}
	left := asg.ChildByFieldName("left")
	ts.Walk(scope, func(n *ts.Node) bool {
		if other != nil {
			return false
		}
		if n.Type() == "string" || n.Type() == "comment" {
			return false
		}
		if n.Type() != "identifier" || p.Text(n) != name || n.Equal(left) {
			return true
		}
		par := n.Parent()
		if par != nil && par.Type() == "attribute" && par.ChildByFieldName("attribute").Equal(n) {
			return true // x.name: another object's attribute
		}
		if par != nil && par.Type() == "keyword_argument" && par.ChildByFieldName("name").Equal(n) {
			return true // f(name=...): a parameter name
		}
		// A read in a nested function counts too: a parameter or an
		// assignment of the same name there is an occurrence that is not a
		// device argument, so it stops the fix.
		if !deviceArgument(p, n) {
			other = n
			return false
		}
		dev = append(dev, n)
		return true
	})
	return dev, other
}

// deviceArgument reports whether n is read as a device argument of a call.
func deviceArgument(p *rule.Pass, n *ts.Node) bool {
	par := n.Parent()
	if par == nil {
		return false
	}
	switch par.Type() {
	case "keyword_argument":
		if !par.ChildByFieldName("value").Equal(n) {
			return false
		}
		switch p.Text(par.ChildByFieldName("name")) {
		case "device", "map_location", "pin_memory_device":
			return true
		case "device_type":
			_, q := kit.Callee(p, par.Parent().Parent())
			return autocastNames[q]
		}
	case "argument_list":
		call := par.Parent()
		al, ok := kit.Arguments(p, call)
		if !ok || len(al.Positional) == 0 || !al.Positional[0].Equal(n) {
			return q1(p, call, n)
		}
		fn, q := kit.Callee(p, call)
		switch {
		case q == "torch.device" || q == "torch.set_default_device" || autocastNames[q]:
			return true
		case kit.LastName(p, call) == "to" && fn.Type() == "attribute" && q == "":
			return true
		}
	}
	return false
}

// q1 reports whether n is torch.load's second positional argument.
func q1(p *rule.Pass, call, n *ts.Node) bool {
	_, q := kit.Callee(p, call)
	al, ok := kit.Arguments(p, call)
	return ok && q == "torch.load" && len(al.Positional) > 1 && al.Positional[1].Equal(n)
}

var autocastNames = map[string]bool{"torch.autocast": true, "torch.amp.autocast": true}

func line(p *rule.Pass, n *ts.Node) int { return bytes.Count(p.Src[:kit.Start(n)], []byte("\n")) + 1 }

// typedIndex parses n as f"{T}:{I}" where T is a name assigned "cuda" once in
// the same function or module (the device type): s spans the f-string, idx
// is I.
func typedIndex(p *rule.Pass, n *ts.Node) (kit.Str, *ts.Node, bool) {
	kids := ts.Children(n)
	if len(kids) != 5 || kids[0].Type() != "string_start" || !strings.ContainsAny(strings.ToLower(p.Text(kids[0])), "f") ||
		kids[1].Type() != "interpolation" || kids[2].Type() != "string_content" || p.Text(kids[2]) != ":" ||
		kids[3].Type() != "interpolation" || kids[1].NamedChildCount() != 1 || kids[3].NamedChildCount() != 1 {
		return kit.Str{}, nil, false
	}
	t, idx := kids[1].ChildByFieldName("expression"), kids[3].ChildByFieldName("expression")
	if t == nil || idx == nil || t.Type() != "identifier" || !cudaName(p, n, p.Text(t)) {
		return kit.Str{}, nil, false
	}
	if !kit.DeviceName(p.Text(t)) && !reachesDevice(p, n) {
		return kit.Str{}, nil, false // f"{mode}:{impl}": a label unless it is used as a device
	}
	start := p.Text(kids[0])
	prefix := strings.TrimRight(start, "\"'")
	return kit.Str{Node: n, Quote: start[len(prefix):], Index: p.Text(idx), IndexNode: idx, FString: true}, idx, true
}

// typeIndexShape parses n as f"{T}:{I}" with T a plain name: T's and I's
// text.
func typeIndexShape(p *rule.Pass, n *ts.Node) (string, string, bool) {
	kids := ts.Children(n)
	if len(kids) != 5 || kids[0].Type() != "string_start" || !strings.ContainsAny(strings.ToLower(p.Text(kids[0])), "f") ||
		kids[1].Type() != "interpolation" || kids[2].Type() != "string_content" || p.Text(kids[2]) != ":" ||
		kids[3].Type() != "interpolation" || kids[1].NamedChildCount() != 1 || kids[3].NamedChildCount() != 1 {
		return "", "", false
	}
	t, idx := kids[1].ChildByFieldName("expression"), kids[3].ChildByFieldName("expression")
	if t == nil || idx == nil || t.Type() != "identifier" {
		return "", "", false
	}
	return p.Text(t), p.Text(idx), true
}

// cudaName reports whether name is assigned exactly once in the scope of n
// (or, failing a binding there, the module) and that value is "cuda".
func cudaName(p *rule.Pass, n *ts.Node, name string) bool {
	for scope := scopeOf(n); scope != nil; scope = scopeOf(scope) {
		var vals []*ts.Node
		ts.Walk(scope, func(x *ts.Node) bool {
			if x.Type() == "string" || x.Type() == "comment" {
				return false
			}
			if x.Type() == "assignment" && scopeOf(x).Equal(scope) {
				if l := x.ChildByFieldName("left"); l != nil && l.Type() == "identifier" && p.Text(l) == name {
					vals = append(vals, x.ChildByFieldName("right"))
				}
			}
			return true
		})
		if len(vals) > 0 {
			if len(vals) != 1 {
				return false
			}
			s, ok := kit.PlainString(p, vals[0])
			return ok && s == "cuda"
		}
		if scope.Type() == "module" {
			break
		}
	}
	return false
}

// reportTypedIndex reports f"{device_type}:{i}" with the rewrite of an
// indexed device that must stay a str.
func reportTypedIndex(p *rule.Pass, dv *kit.Dev, s kit.Str, idx *ts.Node) {
	f := rule.Finding{Start: kit.Start(s.Node), End: kit.End(s.Node),
		Message: "CUDA device built from a device type and an index (" + p.Text(s.Node) + ")"}
	if p.Target == rule.TPU {
		safety := rule.Safe
		if !kit.PerProcessIndex(s.Index) {
			safety = rule.Unsafe
			f.Message += indexNote(s.Index)
		}
		typ := s.Node.Child(1).ChildByFieldName("expression")
		f.Fix = &rule.Fix{Title: "Use the process's TPU chip", Safety: safety,
			Edits: []rule.Edit{{Start: kit.Start(s.Node), End: kit.End(s.Node), New: p.Text(typ)}}}
	} else {
		f.Fix = dv.AtFix("Use "+dv.AtName()+"(...)", rule.Safe,
			rule.Edit{Start: kit.Start(s.Node), End: kit.Start(idx), New: "str(" + dv.AtName() + "("},
			rule.Edit{Start: kit.End(idx), End: kit.End(s.Node), New: "))"})
	}
	kit.Report(p, f)
}

// reachesDevice reports whether the value n is a device argument, directly
// or through a name it is assigned to.
func reachesDevice(p *rule.Pass, n *ts.Node) bool {
	if deviceArgument(p, n) {
		return true
	}
	asg, name := assignedTo(p, n)
	if asg == nil {
		return false
	}
	dev, _ := readsOf(p, asg, name)
	return len(dev) > 0
}
