package kit

import (
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Lightning. Lightning's Trainer and Fabric take their accelerator as a
// string. "cuda" and "gpu" run on NVIDIA GPUs only; Lightning's "tpu" is its
// PyTorch/XLA accelerator, which needs torch_xla, and torch_xla must not be
// mixed with TorchTPU in one process; Lightning ships no TorchTPU
// accelerator. So no rule can rewrite such a value: lightning-accelerator
// (hazards, PDX014) reports each one, and a CUDA check whose branch picks
// the CUDA accelerator stays CUDA-only (CUDAOnlyGuards), so that a TPU host
// takes the path it took before the migration.

// LightningSite is a string literal that names a Lightning accelerator
// other than "cpu", "mps" or "auto".
type LightningSite struct {
	Lit   *ts.Node // the string literal
	Value string   // "cuda", "gpu" or "tpu"
	Call  *ts.Node // the Trainer or Fabric call the accelerator reaches
	// Via is the variable (its text) through which the value reaches the
	// call's accelerator= ("" when the literal is the argument itself).
	Via string
	// Check marks a literal the code compares the variable with, lists as
	// allowed, or names in the variable's Literal[...] annotation; else the
	// literal is a value the variable takes (or the argument itself).
	Check bool
}

// lightningAccelerators are the accelerator names LightningSites reports.
var lightningAccelerators = map[string]bool{"cuda": true, "gpu": true, "tpu": true}

// LightningCall reports whether call builds Lightning's Trainer or Fabric
// (lightning, lightning.pytorch, lightning.fabric, pytorch_lightning,
// lightning_fabric; `import lightning as L` makes `L.Fabric` one).
func LightningCall(p *rule.Pass, call *ts.Node) bool {
	q := CallName(p, call)
	root, _, _ := strings.Cut(q, ".")
	last := q[strings.LastIndexByte(q, '.')+1:]
	return (root == "lightning" || root == "pytorch_lightning" || root == "lightning_fabric") &&
		(last == "Trainer" || last == "Fabric")
}

// LightningSites returns the module's LightningSites in source order,
// computed once per file. A site is the accelerator= argument of a
// LightningCall (each value of `a if c else b`), or, where that argument is
// a variable (a name or attribute, by its text), a literal in the scope of
// the call (its function, else the module; nested functions and classes
// are not entered) that the variable is assigned, that is the variable's
// parameter default or in its annotation (`Literal["cpu", "cuda"]`), that
// the variable is compared with (`==`, `in ("cuda", "gpu")`), or that is in
// a collection the variable is tested against (`allowed = {"cpu", "cuda"}`
// ... `accelerator not in allowed`).
func LightningSites(p *rule.Pass) []LightningSite {
	return p.Memo("kit.lightning", func() any {
		var out []LightningSite
		if !Mentions(p.Src, "lightning") {
			return out
		}
		seen := map[int]bool{}
		add := func(s LightningSite) {
			if !seen[Start(s.Lit)] {
				seen[Start(s.Lit)] = true
				out = append(out, s)
			}
		}
		Calls(p, func(call *ts.Node) {
			if !LightningCall(p, call) {
				return
			}
			v := KwargValue(p, p.Field(call, "arguments"), "accelerator")
			if v == nil {
				return
			}
			for _, val := range valuesOf(v) {
				if s, ok := acceleratorName(p, val); ok {
					add(LightningSite{Lit: val, Value: s, Call: call})
				} else if val.Type() == "identifier" || val.Type() == "attribute" {
					for _, s := range acceleratorFlow(p, call, p.Text(val)) {
						add(s)
					}
				}
			}
		})
		sort.Slice(out, func(a, b int) bool { return Start(out[a].Lit) < Start(out[b].Lit) })
		return out
	}).([]LightningSite)
}

// LightningSiteAt returns the LightningSite whose literal is n.
func LightningSiteAt(p *rule.Pass, n *ts.Node) (LightningSite, bool) {
	for _, s := range LightningSites(p) {
		if s.Lit.Equal(n) {
			return s, true
		}
	}
	return LightningSite{}, false
}

// valuesOf returns the nodes an expression's value may come from: itself,
// or through parentheses each arm of `a if c else b`.
func valuesOf(n *ts.Node) []*ts.Node {
	switch {
	case n.Type() == "parenthesized_expression" && n.NamedChildCount() == 1:
		return valuesOf(n.NamedChild(0))
	case n.Type() == "conditional_expression" && n.NamedChildCount() == 3:
		return append(valuesOf(n.NamedChild(0)), valuesOf(n.NamedChild(2))...)
	}
	return []*ts.Node{n}
}

// acceleratorName is the accelerator a string literal names, if it is one
// LightningSites reports.
func acceleratorName(p *rule.Pass, n *ts.Node) (string, bool) {
	s, ok := PlainString(p, n)
	s = strings.ToLower(s)
	return s, ok && lightningAccelerators[s]
}

// acceleratorFlow returns the literals of call's scope that the variable
// name (the text of a name or attribute) takes or is checked against.
func acceleratorFlow(p *rule.Pass, call *ts.Node, name string) []LightningSite {
	scope := ts.Ancestor(call, "function_definition")
	if scope == nil {
		scope = p.Tree.Root()
	}
	var out []LightningSite
	site := func(n *ts.Node, check bool) {
		for _, v := range valuesOf(n) {
			switch v.Type() {
			case "string":
				if s, ok := acceleratorName(p, v); ok {
					out = append(out, LightningSite{Lit: v, Value: s, Call: call, Via: name, Check: check})
				}
			case "list", "tuple", "set":
				for _, e := range ts.Children(v) {
					if s, ok := acceleratorName(p, e); ok {
						out = append(out, LightningSite{Lit: e, Value: s, Call: call, Via: name, Check: true})
					}
				}
			}
		}
	}
	if scope.Type() == "function_definition" {
		for _, prm := range ts.Children(scope.ChildByFieldName("parameters")) {
			var pname *ts.Node
			switch prm.Type() {
			case "typed_parameter":
				if prm.NamedChildCount() > 0 {
					pname = prm.NamedChild(0)
				}
			case "default_parameter", "typed_default_parameter":
				pname = prm.ChildByFieldName("name")
			}
			if pname == nil || p.Text(pname) != name {
				continue
			}
			if v := prm.ChildByFieldName("value"); v != nil {
				site(v, false)
			}
			if t := prm.ChildByFieldName("type"); t != nil {
				ts.Walk(t, func(c *ts.Node) bool {
					if c.Type() == "string" {
						site(c, true)
						return false
					}
					return true
				})
			}
		}
	}
	collections := map[string]*ts.Node{} // name -> the list, tuple or set it is assigned
	var tested []string                  // names the variable is tested against with in / not in
	body := scope
	if scope.Type() == "function_definition" {
		body = scope.ChildByFieldName("body")
	}
	ts.Walk(body, func(c *ts.Node) bool {
		switch c.Type() {
		case "function_definition", "class_definition", "lambda", "comment", "string":
			return false
		case "assignment":
			left, right := c.ChildByFieldName("left"), c.ChildByFieldName("right")
			if left == nil || right == nil {
				return true
			}
			if p.Text(left) == name {
				site(right, false)
			}
			switch right.Type() {
			case "list", "tuple", "set":
				if left.Type() == "identifier" {
					collections[p.Text(left)] = right
				}
			}
		case "comparison_operator":
			ops := ts.Children(c)
			for i, op := range ops {
				if p.Text(op) != name {
					continue
				}
				for j, other := range ops {
					if j == i {
						continue
					}
					if other.Type() == "identifier" {
						tested = append(tested, p.Text(other))
					}
					site(other, true)
				}
			}
		}
		return true
	})
	for _, t := range tested {
		if coll := collections[t]; coll != nil {
			site(coll, true)
		}
	}
	return out
}
