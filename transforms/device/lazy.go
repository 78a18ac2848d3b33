package device

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Library modules find the device on first use (kit.Placement): a default a
// library evaluates when it is imported — a parameter default, a dataclass
// field — must not call kit.LazyDevice then. lazyDefault moves such a
// default to where it is used:
//
//	def f(x, device="cuda"):          def f(x, device=DEVICE_ON_FIRST_USE):
//	    return x.to(device)      →        if device is DEVICE_ON_FIRST_USE:
//	                                          device = pallasify_device().type
//	                                      return x.to(device)
//
//	@dataclass                        @dataclass
//	class Cfg:                   →    class Cfg:
//	    device: str = "cuda"              device: str = field(default_factory=lambda: pallasify_device().type)
//
// The parameter's new default is a sentinel (kit.FirstUse, defined like the
// other helpers), not None, so a caller passing device=None explicitly
// passes None as before: the rewrite is exact.
//
// Any other import-time site (kit.ImportTime: a class attribute, a
// module-level value) keeps the call, which then runs on import.

// lazyDefault returns f with its edits moved out of import time where the
// site allows it, or f unchanged.
func lazyDefault(p *rule.Pass, st site, f *rule.Fix) *rule.Fix {
	if f == nil || len(f.Preludes) == 0 || !kit.Library(p) {
		return f
	}
	value, holder := defaultHolder(st.s.Node)
	if value == nil || !kit.ImportTime(p, holder) {
		return f
	}
	newText, ok := applyWithin(p, value, f.Edits)
	if !ok {
		return f
	}
	switch holder.Type() {
	case "default_parameter", "typed_default_parameter":
		fn := enclosingFunction(holder)
		if fn == nil {
			return f
		}
		at, indent, ok := bodyStart(p, fn)
		if !ok {
			return f
		}
		name := p.Text(holder.ChildByFieldName("name"))
		g := *f
		g.Edits = []rule.Edit{
			{Start: kit.Start(value), End: kit.End(value), New: kit.FirstUse},
			{Start: at, End: at, New: indent + "if " + name + " is " + kit.FirstUse + ":\n" +
				indent + "    " + name + " = " + newText + "\n"},
		}
		g.Preludes = append(append([]rule.Prelude(nil), f.Preludes...), kit.SharedPrelude(p, kit.FirstUsePrelude(), kit.FirstUse))
		return &g
	case "assignment":
		if holder.ChildByFieldName("type") == nil || !inDataclass(p, holder) {
			return f
		}
		fieldFn, imp := "dataclasses.field", "import dataclasses"
		if p.Imports.Names["field"] == "dataclasses.field" {
			fieldFn, imp = "field", ""
		}
		g := *f
		g.Edits = []rule.Edit{{Start: kit.Start(value), End: kit.End(value), New: fieldFn + "(default_factory=lambda: " + newText + ")"}}
		if imp != "" {
			g.Imports = append(append([]string(nil), g.Imports...), imp)
		}
		return &g
	}
	return f
}

// defaultHolder returns the value node holding n and its holder: the
// parameter with a default, or the annotated assignment, n's value is (nil
// when n is neither).
func defaultHolder(n *ts.Node) (value, holder *ts.Node) {
	for c := n; c != nil; c = c.Parent() {
		par := c.Parent()
		if par == nil {
			return nil, nil
		}
		switch par.Type() {
		case "default_parameter", "typed_default_parameter":
			if v := par.ChildByFieldName("value"); v != nil && v.Equal(c) {
				return c, par
			}
			return nil, nil
		case "assignment":
			if v := par.ChildByFieldName("right"); v != nil && v.Equal(c) {
				return c, par
			}
			return nil, nil
		case "parenthesized_expression", "conditional_expression", "call", "argument_list", "binary_operator":
			continue
		}
		return nil, nil
	}
	return nil, nil
}

// enclosingFunction is the function whose parameter list holds param.
func enclosingFunction(param *ts.Node) *ts.Node {
	ps := param.Parent()
	if ps == nil || ps.Type() != "parameters" {
		return nil
	}
	fn := ps.Parent()
	if fn == nil || fn.Type() != "function_definition" {
		return nil
	}
	return fn
}

// bodyStart is where a statement can be inserted first in fn's body (after
// its docstring) and the body's indentation; false when the body is on the
// def line.
func bodyStart(p *rule.Pass, fn *ts.Node) (int, string, bool) {
	body := fn.ChildByFieldName("body")
	if body == nil || body.NamedChildCount() == 0 {
		return 0, "", false
	}
	first := body.NamedChild(0)
	if first.StartPoint().Row == fn.StartPoint().Row || first.StartPoint().Row == fn.ChildByFieldName("parameters").EndPoint().Row {
		return 0, "", false
	}
	indent := kit.LineIndent(p.Src, kit.Start(first))
	stmt := first
	if first.Type() == "expression_statement" && first.NamedChildCount() == 1 && first.NamedChild(0).Type() == "string" {
		if body.NamedChildCount() < 2 {
			return 0, "", false
		}
		stmt = body.NamedChild(1)
	}
	if stmt.Type() == "comment" || kit.LineStart(p.Src, kit.Start(stmt)) != kit.Start(stmt)-len(indent) {
		return 0, "", false
	}
	return kit.Start(stmt) - len(indent), indent, true
}

// inDataclass reports whether the annotated assignment asg is a field of a
// class decorated with dataclass (dataclasses.dataclass, @dataclass(...)).
func inDataclass(p *rule.Pass, asg *ts.Node) bool {
	stmt := asg.Parent()
	if stmt == nil || stmt.Type() != "expression_statement" {
		return false
	}
	block := stmt.Parent()
	if block == nil || block.Type() != "block" {
		return false
	}
	cls := block.Parent()
	if cls == nil || cls.Type() != "class_definition" {
		return false
	}
	dec := cls.Parent()
	if dec == nil || dec.Type() != "decorated_definition" {
		return false
	}
	for _, c := range ts.Children(dec) {
		if c.Type() != "decorator" {
			continue
		}
		t := strings.TrimSpace(strings.TrimPrefix(p.Text(c), "@"))
		t, _, _ = strings.Cut(t, "(")
		if q := p.Imports.Qualify(t); q == "dataclasses.dataclass" || t == "dataclass" || t == "dataclasses.dataclass" {
			return true
		}
	}
	return false
}

// applyWithin is the text of n with the edits (all inside n) applied.
func applyWithin(p *rule.Pass, n *ts.Node, edits []rule.Edit) (string, bool) {
	s, e := kit.Start(n), kit.End(n)
	src := p.Src[s:e]
	var b strings.Builder
	pos := 0
	for _, ed := range sortedEdits(edits) {
		if ed.Start < s || ed.End > e || ed.Start-s < pos {
			return "", false
		}
		b.Write(src[pos : ed.Start-s])
		b.WriteString(ed.New)
		pos = ed.End - s
	}
	b.Write(src[pos:])
	return b.String(), true
}

func sortedEdits(edits []rule.Edit) []rule.Edit {
	out := append([]rule.Edit(nil), edits...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Start < out[j-1].Start; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
