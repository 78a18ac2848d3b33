package kernels

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// kparam is one kernel parameter as declared.
type kparam struct {
	name    string
	ctype   string // normalised: "const float*"
	base    string // element type without const/pointer: "float"
	pointer bool
}

// kernelParams reads the parameter list of a function definition.
func kernelParams(f *cudaFile, fn *ts.Node) []kparam {
	d := fn.ChildByFieldName("declarator")
	for d != nil && d.Type() != "function_declarator" {
		d = d.ChildByFieldName("declarator")
	}
	if d == nil {
		return nil
	}
	var out []kparam
	for _, pd := range ts.Children(d.ChildByFieldName("parameters")) {
		if !strings.Contains(pd.Type(), "parameter_declaration") {
			continue
		}
		p := kparam{}
		var quals []string
		for i := 0; i < int(pd.ChildCount()); i++ {
			c := pd.Child(i)
			if c.Type() == "type_qualifier" && pd.FieldNameForChild(i) == "" {
				if q := f.text(c); q == "const" || q == "volatile" {
					quals = append(quals, q)
				}
			}
		}
		t := pd.ChildByFieldName("type")
		if t == nil {
			continue
		}
		p.base = strings.Join(strings.Fields(f.text(t)), " ")
		stars := 0
		dd := pd.ChildByFieldName("declarator")
		for dd != nil {
			switch dd.Type() {
			case "pointer_declarator", "abstract_pointer_declarator":
				stars++
				dd = dd.ChildByFieldName("declarator")
			case "array_declarator":
				stars++
				dd = dd.ChildByFieldName("declarator")
			case "reference_declarator":
				if dd.NamedChildCount() > 0 {
					dd = dd.NamedChild(0)
				} else {
					dd = nil
				}
			case "identifier":
				p.name = f.text(dd)
				dd = nil
			default:
				dd = dd.ChildByFieldName("declarator")
			}
		}
		p.pointer = stars > 0
		ct := strings.Join(append(quals, p.base), " ")
		p.ctype = ct + strings.Repeat("*", stars)
		out = append(out, p)
	}
	return out
}

// access is how a kernel uses one pointer parameter.
type access struct{ read, write bool }

// accessAnalysis finds reads and writes through each pointer parameter of fn,
// following local pointer aliases and calls into device functions.
type accessAnalysis struct {
	f     *cudaFile
	funcs map[string]*item // device functions of the closure by name
	depth int
}

func (a *accessAnalysis) params(it *item) map[string]*access {
	out := map[string]*access{}
	fn := it.node
	ps := kernelParams(it.file, fn)
	aliases := map[string]string{}
	for _, p := range ps {
		if p.pointer {
			out[p.name] = &access{}
			aliases[p.name] = p.name
		}
	}
	body := fn.ChildByFieldName("body")
	if body == nil {
		return out
	}
	src := it.file.masked
	// aliases: T* q = p + ...; (in order, a few rounds for chains)
	for range 3 {
		ts.Walk(body, func(n *ts.Node) bool {
			if n.Type() != "init_declarator" {
				return true
			}
			d := n.ChildByFieldName("declarator")
			if d == nil || d.Type() != "pointer_declarator" {
				return true
			}
			name := declName(it.file, d)
			if root := pointerRoot(n.ChildByFieldName("value"), src, aliases); root != "" {
				aliases[name] = root
			}
			return true
		})
	}
	ts.Walk(body, func(n *ts.Node) bool {
		if n.Type() != "identifier" {
			return true
		}
		root, ok := aliases[ts.Text(n, src)]
		if !ok {
			return true
		}
		if p := n.Parent(); p != nil && p.Type() == "init_declarator" && p.ChildByFieldName("declarator") == n {
			return true
		}
		if p := n.Parent(); p != nil && p.Type() == "pointer_declarator" {
			return true
		}
		r, w := a.use(n, src)
		out[root].read = out[root].read || r
		out[root].write = out[root].write || w
		return true
	})
	return out
}

// pointerRoot returns the parameter a pointer expression points into.
func pointerRoot(v *ts.Node, src []byte, aliases map[string]string) string {
	if v == nil {
		return ""
	}
	v = stripCasts(v, src)
	switch v.Type() {
	case "identifier":
		return aliases[ts.Text(v, src)]
	case "binary_expression":
		if r := pointerRoot(v.ChildByFieldName("left"), src, aliases); r != "" {
			return r
		}
		return pointerRoot(v.ChildByFieldName("right"), src, aliases)
	case "pointer_expression":
		if ts.Text(v.Child(0), src) == "&" {
			arg := v.ChildByFieldName("argument")
			if arg != nil && arg.Type() == "subscript_expression" {
				return pointerRoot(arg.ChildByFieldName("argument"), src, aliases)
			}
		}
	}
	return ""
}

var atomicFns = map[string]bool{"atomicAdd": true, "atomicSub": true, "atomicExch": true, "atomicMin": true, "atomicMax": true,
	"atomicInc": true, "atomicDec": true, "atomicCAS": true, "atomicAnd": true, "atomicOr": true, "atomicXor": true,
	"atomicAdd_block": true, "atomicAdd_system": true}

// use classifies one occurrence of a pointer (or alias) identifier.
func (a *accessAnalysis) use(n *ts.Node, src []byte) (read, write bool) {
	cur := n
	deref := false
	for {
		p := cur.Parent()
		if p == nil {
			return deref, false
		}
		switch p.Type() {
		case "parenthesized_expression", "cast_expression":
			cur = p
			continue
		case "binary_expression":
			op := ts.Text(p.Child(1), src)
			if !deref && (op == "+" || op == "-") {
				cur = p
				continue
			}
			return true, false
		case "call_expression":
			fn := p.ChildByFieldName("function")
			if fn != nil && fn.Type() == "template_function" && p.ChildByFieldName("arguments") != nil {
				base := ts.Text(fn.ChildByFieldName("name"), src)
				if strings.HasSuffix(base, "_cast") {
					cur = p
					continue
				}
			}
			if cur == fn {
				return true, false
			}
			return a.callArg(p, cur, src, deref)
		case "argument_list":
			if call := p.Parent(); call != nil && call.Type() == "call_expression" {
				return a.callArg(call, cur, src, deref)
			}
			return true, false
		case "subscript_expression", "subscript_argument_list":
			if p.ChildByFieldName("argument") == cur {
				deref = true
				cur = p
				continue
			}
			return true, false // used as an index
		case "pointer_expression":
			op := ts.Text(p.Child(0), src)
			if op == "*" {
				deref = true
				cur = p
				continue
			}
			// &p[i]
			if deref {
				deref = false
				cur = p
				continue
			}
			return true, false
		case "field_expression":
			if deref {
				cur = p
				continue
			}
			return true, false
		case "assignment_expression":
			if p.ChildByFieldName("left") == cur {
				if !deref {
					return false, false // the pointer itself is reassigned
				}
				if ts.Text(p.Child(1), src) == "=" {
					return false, true
				}
				return true, true
			}
			return deref, false
		case "update_expression":
			if deref {
				return true, true
			}
			return false, false
		default:
			return deref, false
		}
	}
}

// callArg classifies a pointer passed to a call.
func (a *accessAnalysis) callArg(call, arg *ts.Node, src []byte, deref bool) (bool, bool) {
	if deref {
		return true, false // a value read and passed
	}
	fn := call.ChildByFieldName("function")
	name := lastName(ts.Text(fn, src))
	args := ts.Children(call.ChildByFieldName("arguments"))
	idx := -1
	for i, x := range args {
		if x.StartByte() == arg.StartByte() && x.EndByte() == arg.EndByte() {
			idx = i
		}
	}
	switch {
	case atomicFns[name]:
		if idx == 0 {
			return true, true
		}
		return true, false
	case strings.HasPrefix(name, "__ldg") || strings.HasPrefix(name, "__ldcs") || strings.HasPrefix(name, "__ldca") || strings.HasPrefix(name, "__ldcg"):
		return true, false
	case strings.HasPrefix(name, "__stcs") || strings.HasPrefix(name, "__stcg") || strings.HasPrefix(name, "__stwt"):
		return false, true
	}
	if it := a.funcs[name]; it != nil && a.depth < 6 && idx >= 0 {
		ps := kernelParams(it.file, it.node)
		if idx < len(ps) && ps[idx].pointer {
			a.depth++
			acc := a.params(it)
			a.depth--
			if x := acc[ps[idx].name]; x != nil {
				return x.read, x.write
			}
		}
	}
	return true, true // unknown callee: assume both
}

// shapeFromIndexing infers a 1-D shape for pointer param p when every access
// p[i] in the kernel uses one index variable i that the kernel bounds by a
// size parameter (i < n, n > i, i >= n in a guard). sizes maps size
// parameter names to their expressions. It returns nil when unsure.
func shapeFromIndexing(k *item, p string, sizes map[string]*Expr) []*Expr {
	src := k.file.masked
	body := k.node.ChildByFieldName("body")
	if body == nil {
		return nil
	}
	idx := ""
	ok := true
	ts.Walk(body, func(n *ts.Node) bool {
		if !ok {
			return false
		}
		if n.Type() == "identifier" && ts.Text(n, src) == p {
			par := n.Parent()
			if par == nil || par.Type() != "subscript_expression" || par.ChildByFieldName("argument") != n {
				ok = false // used otherwise (alias, pointer arithmetic, call argument)
				return false
			}
			i := strings.TrimSpace(strings.Trim(ts.Text(par.ChildByFieldName("indices"), src), "[]"))
			if identRE.FindString(i) != i || (idx != "" && idx != i) {
				ok = false
				return false
			}
			idx = i
		}
		return true
	})
	if !ok || idx == "" {
		return nil
	}
	var bound *Expr
	ts.Walk(body, func(n *ts.Node) bool {
		if bound != nil || n.Type() != "binary_expression" {
			return bound == nil
		}
		op := ts.Text(n.Child(1), src)
		l := strings.TrimSpace(ts.Text(n.ChildByFieldName("left"), src))
		r := strings.TrimSpace(ts.Text(n.ChildByFieldName("right"), src))
		switch {
		case (op == "<" || op == ">=") && l == idx:
			bound = sizes[r]
		case (op == ">" || op == "<=") && r == idx:
			bound = sizes[l]
		}
		return bound == nil
	})
	if bound == nil || len(bound.Symbols()) == 0 {
		return nil
	}
	return []*Expr{bound}
}
