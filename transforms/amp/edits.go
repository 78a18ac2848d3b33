package amp

import (
	"bytes"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// plan is a set of edits with the safety they need.
type plan struct {
	edits  []rule.Edit
	safety rule.Safety
	note   string
}

func (pl *plan) add(e ...rule.Edit) { pl.edits = append(pl.edits, e...) }

func (pl *plan) unsafe(note string) {
	pl.safety = rule.Unsafe
	pl.note += note
}

// devType is the device-type expression for the target.
func devType(p *rule.Pass, dv *kit.Dev) string {
	if p.Target == rule.TPU {
		return `"tpu"`
	}
	return dv.Type()
}

const fp16Note = "; fp16 autocast becomes bf16, the TPU's native type: numerics change (bf16 has fewer mantissa bits)"

// tpuDtype adds dtype=torch.bfloat16 (tpu target) when the call names no
// dtype, and turns an explicit float16 into bfloat16 as an unsafe fix.
// first is the text inserted as the first argument, if any; when the call
// has no arguments the two insertions are merged.
func tpuDtype(p *rule.Pass, pl *plan, al kit.ArgList, dtype *ts.Node, first string) string {
	if p.Target != rule.TPU {
		return first
	}
	if dtype == nil {
		if len(al.All) == 0 {
			return first + ", dtype=torch.bfloat16"
		}
		pl.add(al.Append("dtype=torch.bfloat16"))
		return first
	}
	switch strings.TrimSpace(p.Text(dtype)) {
	case "torch.float16", "torch.half":
		pl.add(rule.Edit{Start: kit.Start(dtype), End: kit.End(dtype), New: "torch.bfloat16"})
		pl.unsafe(fp16Note)
	}
	return first
}

var cudaAutocastParams = []string{"enabled", "dtype", "cache_enabled"}

// gated is the text of an enabled= value v that also requires cond: cond for
// a literal True, "" (no change) for a literal False, else "v and cond",
// parenthesised when v binds more loosely than "and".
func gated(p *rule.Pass, v *ts.Node, cond string) string {
	t := strings.TrimSpace(p.Text(v))
	switch {
	case t == "True":
		return cond
	case t == "False":
		return ""
	case v.Type() == "identifier" || v.Type() == "attribute" || v.Type() == "call" || v.Type() == "subscript" ||
		v.Type() == "parenthesized_expression":
		return t + " and " + cond
	}
	return "(" + t + ") and " + cond
}

// autocastOn is the portable autocast's enabled= condition: a CUDA or TPU
// DEVICE. The original ("cuda") autocast disables itself where CUDA is
// missing, so a CPU-only or MPS host keeps running in fp32 rather than
// switching to CPU bf16 autocast.
func autocastOn(dv *kit.Dev) string { return kit.Accelerated(dv.Name()) }

// gateAutocast plans, for the portable target, the edits that keep autocast
// off where the original was off: the enabled= keyword value v (nil when
// absent) gets autocastOn, or enabled=autocastOn is appended. It returns the
// text to merge into a first-argument insertion when the call has no
// arguments (first + ", enabled=...").
func gateAutocast(p *rule.Pass, dv *kit.Dev, pl *plan, al kit.ArgList, v *ts.Node, first string) string {
	if p.Target != rule.Portable {
		return first
	}
	cond := autocastOn(dv)
	if v == nil {
		if len(al.All) == 0 {
			return first + ", enabled=" + cond
		}
		pl.add(al.Append("enabled=" + cond))
		return first
	}
	if t := gated(p, v, cond); t != "" {
		pl.add(rule.Edit{Start: kit.Start(v), End: kit.End(v), New: t})
	}
	return first
}

// cudaAutocast plans the arguments of a torch.cuda.amp.autocast(...) call
// turned into torch.amp.autocast(<device type>, ...): positional arguments
// become keywords (torch.amp.autocast's second parameter is dtype, not
// enabled), the device type goes first, and on tpu the dtype is bf16.
func cudaAutocast(p *rule.Pass, dv *kit.Dev, al kit.ArgList) (*plan, bool) {
	if al.Splat || len(al.Positional) > len(cudaAutocastParams) {
		return nil, false
	}
	var dtype *ts.Node
	var kws []rule.Edit
	rest := &plan{}
	enabled := al.KwValue("enabled")
	for i, a := range al.Positional {
		if i == 0 && p.Target == rule.Portable {
			// enabled given positionally: its keyword and its gate in one edit.
			t := gated(p, a, autocastOn(dv))
			if t == "" {
				t = p.Text(a)
			}
			rest.add(rule.Edit{Start: kit.Start(a), End: kit.End(a), New: "enabled=" + t})
			enabled = a
			continue
		}
		kws = append(kws, rule.Edit{Start: kit.Start(a), End: kit.Start(a), New: cudaAutocastParams[i] + "="})
		if i == 1 {
			dtype = a
		}
	}
	if dtype == nil {
		dtype = al.KwValue("dtype")
	}
	first := tpuDtype(p, rest, al, dtype, devType(p, dv))
	if len(al.Positional) == 0 || p.Target != rule.Portable {
		first = gateAutocast(p, dv, rest, al, enabled, first)
	}
	// The device type is inserted before the keyword names at the same offset.
	pl := &plan{safety: rest.safety, note: rest.note}
	pl.add(al.InsertFirst(first))
	pl.add(kws...)
	pl.add(rest.edits...)
	return pl, true
}

// scaler plans the arguments of a GradScaler call. insertDevice: the call
// has no device argument (torch.cuda.amp.GradScaler, or torch.amp.GradScaler
// relying on its "cuda" default); otherwise devArg is the "cuda" string to
// replace. Portable: enabled only on CUDA; tpu: disabled.
func scaler(p *rule.Pass, dv *kit.Dev, al kit.ArgList, devArg *kit.Str) *plan {
	pl := &plan{}
	dt := devType(p, dv)
	var en string // the enabled= argument to append, if any
	if v := al.KwValue("enabled"); v != nil {
		t := strings.TrimSpace(p.Text(v))
		switch {
		case p.Target == rule.TPU:
			if t != "False" {
				pl.add(rule.Edit{Start: kit.Start(v), End: kit.End(v), New: "False"})
			}
		case t == "True":
			pl.add(rule.Edit{Start: kit.Start(v), End: kit.End(v), New: dt + ` == "cuda"`})
		case t == "False":
		case v.Type() == "identifier" || v.Type() == "attribute" || v.Type() == "call" || v.Type() == "subscript" ||
			v.Type() == "parenthesized_expression":
			pl.add(rule.Edit{Start: kit.End(v), End: kit.End(v), New: " and " + dt + ` == "cuda"`})
		default:
			pl.add(rule.Edit{Start: kit.Start(v), End: kit.Start(v), New: "("},
				rule.Edit{Start: kit.End(v), End: kit.End(v), New: ") and " + dt + ` == "cuda"`})
		}
	} else if p.Target == rule.TPU {
		en = "enabled=False"
	} else {
		en = "enabled=" + dt + ` == "cuda"`
	}
	if devArg != nil {
		pl.add(devArg.Replace(dt))
		if en != "" {
			pl.add(al.Append(en))
		}
	} else if len(al.All) == 0 {
		first := dt
		if en != "" {
			first += ", " + en
		}
		pl.add(al.InsertFirst(first))
	} else {
		pl.add(al.InsertFirst(dt))
		if en != "" {
			pl.add(al.Append(en))
		}
	}
	if p.Target == rule.TPU && fp16(p.Src) {
		pl.unsafe("; the module uses float16, which may still need loss scaling: the disabled scaler is then wrong")
	}
	return pl
}

// fp16 reports whether a module mentions float16 outside of what the tpu
// target rewrites, so a disabled scaler may be wrong.
func fp16(src []byte) bool {
	return bytes.Contains(src, []byte("float16")) || bytes.Contains(src, []byte("torch.half")) || bytes.Contains(src, []byte(".half()"))
}

// importHandled reports whether a callee's head name comes from
// `from torch.cuda.amp import x` or `from torch.cuda import amp`: those call
// sites are rewritten together with their import by cuda-amp-import.
func importHandled(p *rule.Pass, fn *ts.Node) bool {
	head := fn
	for head.Type() == "attribute" {
		head = head.ChildByFieldName("object")
	}
	if head.Type() != "identifier" {
		return false
	}
	q := p.Imports.Names[p.Text(head)]
	return q == "torch.cuda.amp" || strings.HasPrefix(q, "torch.cuda.amp.")
}

func fixOf(p *rule.Pass, dv *kit.Dev, title string, pl *plan) *rule.Fix {
	if p.Target == rule.TPU {
		return kit.TorchFix(title, pl.safety, pl.edits...)
	}
	return dv.Fix(title, pl.safety, pl.edits...)
}
