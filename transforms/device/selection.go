package device

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// selection is the device-selection idiom around a device value:
//
//	"cuda" if torch.cuda.is_available() else "cpu"
//	torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
//	"cpu" if not torch.cuda.is_available() else "cuda"
//	"cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
//
// The expression as a whole says "the accelerator this process has, else
// the CPU": DEVICE says the same (the CUDA or TPU device, else the CPU), so
// the whole expression becomes DEVICE (or its type), keeping only the
// conditions that are not the CUDA check. Rewriting its parts one by one
// (the "cuda" value by one rule, the check by another) gave 14 lines for
// one, and where the value was not a device site it kept "cuda" under a
// check a TPU host passes.
type selection struct {
	expr *ts.Node // the conditional_expression
	rest *ts.Node // the other conjunct of `check and rest`, or nil
}

// selectionOf reports the idiom whose device value is n (a string or a
// torch.device("cuda") call, possibly parenthesized).
func selectionOf(p *rule.Pass, n *ts.Node) (selection, bool) {
	top := n
	for top.Parent() != nil && top.Parent().Type() == "parenthesized_expression" {
		top = top.Parent()
	}
	cond := top.Parent()
	if cond == nil || cond.Type() != "conditional_expression" || cond.NamedChildCount() != 3 {
		return selection{}, false
	}
	body, test, other := cond.NamedChild(0), cond.NamedChild(1), cond.NamedChild(2)
	negated := false
	if t := unparen(test); t.Type() == "not_operator" {
		negated, test = true, t.ChildByFieldName("argument")
	}
	switch {
	case !negated && body.Equal(top):
	case negated && other.Equal(top):
		other = body
	default:
		return selection{}, false
	}
	if !isCPU(p, other) {
		return selection{}, false
	}
	test = unparen(test)
	if cudaCheck(p, test) {
		return selection{expr: cond}, true
	}
	if negated || test.Type() != "boolean_operator" || p.Text(test.ChildByFieldName("operator")) != "and" {
		return selection{}, false
	}
	l, r := test.ChildByFieldName("left"), test.ChildByFieldName("right")
	switch {
	case cudaCheck(p, unparen(l)) && !mentionsCUDA(p, r):
		return selection{expr: cond, rest: r}, true
	case cudaCheck(p, unparen(r)) && !mentionsCUDA(p, l):
		return selection{expr: cond, rest: l}, true
	}
	return selection{}, false
}

// text is the idiom's replacement: val (DEVICE or DEVICE.type) where the
// whole test was the CUDA check, else `val if rest else cpu`.
func (s selection) text(p *rule.Pass, val, cpu string) string {
	if s.rest == nil {
		return val
	}
	rest := p.Text(s.rest)
	if s.rest.Type() == "conditional_expression" || s.rest.Type() == "lambda" {
		rest = "(" + rest + ")"
	}
	return val + " if " + rest + " else " + cpu
}

func unparen(n *ts.Node) *ts.Node {
	for n != nil && n.Type() == "parenthesized_expression" && n.NamedChildCount() == 1 {
		n = n.NamedChild(0)
	}
	return n
}

// cudaCheck reports torch.cuda.is_available() and torch.cuda.device_count() > 0.
func cudaCheck(p *rule.Pass, n *ts.Node) bool {
	if n == nil {
		return false
	}
	switch n.Type() {
	case "call":
		_, q := kit.Callee(p, n)
		al, ok := kit.Arguments(p, n)
		return ok && len(al.All) == 0 && q == "torch.cuda.is_available"
	case "comparison_operator":
		if n.NamedChildCount() != 2 || n.NamedChild(0).Type() != "call" {
			return false
		}
		_, q := kit.Callee(p, n.NamedChild(0))
		op := p.Text(n)[kit.End(n.NamedChild(0))-kit.Start(n) : kit.Start(n.NamedChild(1))-kit.Start(n)]
		lim := p.Text(n.NamedChild(1))
		op = strings.TrimSpace(op)
		return q == "torch.cuda.device_count" && (op == ">" && lim == "0" || op == ">=" && lim == "1")
	}
	return false
}

// mentionsCUDA keeps `torch.cuda.is_available() and torch.cuda.device_count() > 1`
// (a multi-GPU choice) out of the idiom.
func mentionsCUDA(p *rule.Pass, n *ts.Node) bool {
	return kit.Mentions([]byte(p.Text(n)), "cuda")
}

// isCPU reports "cpu" and torch.device("cpu").
func isCPU(p *rule.Pass, n *ts.Node) bool {
	n = unparen(n)
	if s, ok := kit.PlainString(p, n); ok {
		return s == "cpu"
	}
	if n.Type() != "call" {
		return false
	}
	_, q := kit.Callee(p, n)
	al, ok := kit.Arguments(p, n)
	if !ok || q != "torch.device" || len(al.All) != 1 || len(al.Positional) != 1 {
		return false
	}
	s, ok := kit.PlainString(p, al.Positional[0])
	return ok && s == "cpu"
}

// selFix rewrites the idiom as a whole (both targets: the tpu target's
// "tpu" under a TPU check would fail on import where TorchTPU has no chip,
// and DEVICE is the TPU there): DEVICE where the idiom builds a torch.device
// (or feeds a torch API), DEVICE.type where it must stay a str;
// device_at(i) for "cuda:i".
func selFix(p *rule.Pass, dv *kit.Dev, st site) *rule.Fix {
	s := st.s
	whole := st.sel.expr
	asDevice := st.use == useWholeCall || st.use == useDevice
	if st.selCall != nil {
		whole, asDevice = st.selCall, true
	}
	var val, cpu string
	switch {
	case s.Index != "" && asDevice:
		val, cpu = dv.At(s.Index), `torch.device("cpu")`
	case s.Index != "":
		val, cpu = "str("+dv.At(s.Index)+")", `"cpu"`
	case asDevice:
		val, cpu = dv.Name(), `torch.device("cpu")`
	default:
		val, cpu = dv.Type(), `"cpu"`
	}
	if st.use == useDevice && st.selCall == nil {
		cpu = `"cpu"`
	}
	e := rule.Edit{Start: kit.Start(whole), End: kit.End(whole), New: st.sel.text(p, val, cpu)}
	title := "Use " + dv.Name() + " for the device choice"
	if s.Index != "" {
		return dv.AtFix(title, rule.Safe, e)
	}
	return dv.Fix(title, rule.Safe, e)
}

// node is what a finding on the site spans: the literal, or the whole
// idiom it chooses in (its fix replaces that, and a fix of another rule
// inside it, on the CUDA check, is then part of it).
func (st site) node() *ts.Node {
	switch {
	case st.selCall != nil:
		return st.selCall
	case st.sel.expr != nil:
		return st.sel.expr
	}
	return st.s.Node
}
