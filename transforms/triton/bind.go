package triton

import (
	"slices"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Binding: a Triton kernel is its jit object, however a name is bound to it
// and however a launch reaches it. Discovery follows, inside one file, the
// values a launch's callee may hold (same-function value flow first, then
// the module and the class's self attributes):
//
//	kern = triton.jit(fn)                     a binding of fn
//	kern = triton.autotune(...)(triton.jit(fn))
//	kern = triton.jit(do_not_specialize=[...])(fn)
//	triton.jit(fn)[grid](...)                 inline
//	torch.library.wrap_triton(kern)[grid](...)
//	fx = kern; fx[grid](...)                  a local alias
//	fx = a if cond else b                     each branch
//	fx = KERNELS[x.dtype]                     each element of the dict, list or tuple
//	self._kernel = kern; self._kernel[grid](...)
//
// Each name found is linked to a kernel by link (discover.go).

// maxBindDepth bounds how many assignments a callee is followed through.
const maxBindDepth = 8

// assign is one `name = value` or `self.attr = value` of the file.
type assign struct {
	name  string // "x", or "self.attr" (cls.attr too)
	right *ts.Node
	scope int // start byte of the enclosing function, -1 at module level
}

// wrapping are the calls that hand back the jit object they are given.
var wrapping = []string{"torch.library.wrap_triton", "wrap_triton", "torch._library.capture_triton", "capture_triton",
	"torch.library.capture_triton"}

func (pf *pyFile) scopeOf(n *ts.Node) int {
	if f := ts.Ancestor(n, "function_definition", "lambda"); f != nil {
		return int(f.StartByte())
	}
	return -1
}

// assignment records name = value and self.attr = value.
func (pf *pyFile) assignment(n *ts.Node) {
	left, right := n.ChildByFieldName("left"), n.ChildByFieldName("right")
	if left == nil || right == nil {
		return
	}
	name := assignName(pf, left)
	if name == "" {
		return
	}
	pf.assigns = append(pf.assigns, assign{name: name, right: right, scope: pf.scopeOf(n)})
}

// assignName is "x" for an identifier, "self.attr" for self.attr or
// cls.attr, else "".
func assignName(pf *pyFile, n *ts.Node) string {
	switch n.Type() {
	case "identifier":
		return pf.text(n)
	case "attribute":
		obj := n.ChildByFieldName("object")
		if obj != nil && obj.Type() == "identifier" && (pf.text(obj) == "self" || pf.text(obj) == "cls") {
			return "self." + pf.text(n.ChildByFieldName("attribute"))
		}
	}
	return ""
}

// wrappers are the Triton decorators a triton.jit call n ends up under,
// outermost first: triton.autotune(...)(triton.jit(fn)) is autotune, jit.
func (pf *pyFile) wrappers(n *ts.Node) []string {
	decos := []string{"jit"}
	cur := n
	for range maxBindDepth {
		args := cur.Parent()
		if args == nil || args.Type() != "argument_list" || args.Parent() == nil || args.Parent().Type() != "call" {
			break
		}
		c := args.Parent()
		f := c.ChildByFieldName("function")
		switch {
		case f == nil:
			return decos
		case f.Type() == "call":
			d := tritonDecorator(pf.text(f.ChildByFieldName("function")))
			if d == "" || d == "jit" {
				return decos
			}
			decos = append([]string{d}, decos...)
		case slices.Contains(wrapping, pf.text(f)):
		default:
			return decos
		}
		cur = c
	}
	return decos
}

// bindKernels gives each kernel of the file the module-level names bound to
// its jit object.
func (pf *pyFile) bindKernels() {
	byName := map[string]*Kernel{}
	for _, k := range pf.kernels {
		byName[k.Name] = k
	}
	for _, a := range pf.assigns {
		if a.scope >= 0 || strings.Contains(a.name, ".") {
			continue
		}
		switch a.right.Type() {
		case "dictionary", "list", "tuple", "set", "subscript":
			continue // a collection of kernels, or one of its elements: not the jit object itself
		}
		for _, t := range pf.targets(a.right, 0) {
			if k := byName[t]; k != nil && t != a.name && !slices.Contains(k.Bindings, a.name) {
				k.Bindings = append(k.Bindings, a.name)
			}
		}
	}
}

// targets are the names (kernels, bindings, imported names) expression n
// may hold a jit object of. An unknown name is itself; an attribute of
// anything but self is its attribute name (a module's kernel).
func (pf *pyFile) targets(n *ts.Node, depth int) []string {
	if n == nil || depth > maxBindDepth {
		return nil
	}
	var out []string
	add := func(ns ...string) {
		for _, x := range ns {
			if x != "" && !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	}
	switch n.Type() {
	case "identifier":
		name := pf.text(n)
		if vals := pf.valuesOf(name, pf.scopeOf(n)); len(vals) > 0 {
			for _, v := range vals {
				add(pf.targets(v, depth+1)...)
			}
			if len(out) > 0 {
				return out
			}
		}
		add(name)
	case "attribute":
		if name := assignName(pf, n); name != "" {
			for _, v := range pf.valuesOf(name, -2) {
				add(pf.targets(v, depth+1)...)
			}
			if len(out) > 0 {
				return out
			}
		}
		add(pf.text(n.ChildByFieldName("attribute")))
	case "parenthesized_expression":
		for _, c := range ts.Children(n) {
			add(pf.targets(c, depth+1)...)
		}
	case "conditional_expression":
		// a if cond else b: the two values (the condition is the middle child)
		var vals []*ts.Node
		for _, c := range ts.Children(n) {
			if c.Type() != "if" && c.Type() != "else" {
				vals = append(vals, c)
			}
		}
		if len(vals) == 3 {
			add(pf.targets(vals[0], depth+1)...)
			add(pf.targets(vals[2], depth+1)...)
		}
	case "subscript":
		// KERNELS[key]: every element the collection holds
		for _, e := range pf.elements(n.ChildByFieldName("value"), depth+1) {
			add(pf.targets(e, depth+1)...)
		}
	case "dictionary", "list", "tuple":
		for _, e := range pf.elements(n, depth+1) {
			add(pf.targets(e, depth+1)...)
		}
	case "call":
		if fn, ok := jitCall(pf, n); ok {
			add(fn)
			break
		}
		f := n.ChildByFieldName("function")
		args := callArgNodes(n)
		switch {
		case f == nil || len(args) == 0:
		case f.Type() == "call" && tritonDecorator(pf.text(f.ChildByFieldName("function"))) != "":
			// triton.autotune(...)(kern), triton.heuristics(...)(kern)
			add(pf.targets(args[0], depth+1)...)
		case slices.Contains(wrapping, pf.text(f)):
			add(pf.targets(args[0], depth+1)...)
		}
	}
	return out
}

// valuesOf are the values assigned to name: in the function scope when it
// assigns it, else at module level; scope -2 looks everywhere (self
// attributes are set in one method and read in another).
func (pf *pyFile) valuesOf(name string, scope int) []*ts.Node {
	var local, module, any []*ts.Node
	for _, a := range pf.assigns {
		if a.name != name {
			continue
		}
		any = append(any, a.right)
		switch {
		case a.scope == scope && scope >= 0:
			local = append(local, a.right)
		case a.scope < 0:
			module = append(module, a.right)
		}
	}
	switch {
	case scope == -2:
		return any
	case len(local) > 0:
		return local
	}
	return module
}

// elements are the values of a dict, list or tuple literal, or of the
// collection a name or self attribute is assigned.
func (pf *pyFile) elements(n *ts.Node, depth int) []*ts.Node {
	if n == nil || depth > maxBindDepth {
		return nil
	}
	switch n.Type() {
	case "dictionary":
		var out []*ts.Node
		for _, c := range ts.Children(n) {
			if c.Type() == "pair" {
				out = append(out, c.ChildByFieldName("value"))
			}
		}
		return out
	case "list", "tuple":
		var out []*ts.Node
		for _, c := range ts.Children(n) {
			switch c.Type() {
			case "[", "]", "(", ")", ",", "comment":
			default:
				out = append(out, c)
			}
		}
		return out
	case "identifier", "attribute":
		name := assignName(pf, n)
		scope := -2
		if n.Type() == "identifier" {
			scope = pf.scopeOf(n)
		}
		var out []*ts.Node
		for _, v := range pf.valuesOf(name, scope) {
			out = append(out, pf.elements(v, depth+1)...)
		}
		return out
	}
	return nil
}

func jitCall(pf *pyFile, n *ts.Node) (string, bool) { return kernels.TritonJitCall(n, pf.src, pf.jits) }

// callArgNodes are the argument nodes of call n.
func callArgNodes(n *ts.Node) []*ts.Node {
	var out []*ts.Node
	for _, a := range ts.Children(n.ChildByFieldName("arguments")) {
		switch a.Type() {
		case "(", ")", ",", "comment":
		default:
			out = append(out, a)
		}
	}
	return out
}
