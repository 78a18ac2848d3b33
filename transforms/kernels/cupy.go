package kernels

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// pyLaunch is a CuPy kernel call kern(grid, block, args[, shared_mem=...])
// translated while the Python tree was open.
type pyLaunch struct {
	file   string
	line   int
	kernel string // kernel name ("" : the RawKernel's only kernel)
	grid   [3]*Expr
	block  [3]*Expr
	shared *Expr
	args   []pyArg
	checks []*Expr // assert conditions on sizes
	err    string
}

// pyArg is one kernel argument of a CuPy launch.
type pyArg struct {
	array bool
	shape []*Expr
	expr  *Expr    // integer scalar
	value *float64 // literal float scalar
	err   string
}

// pyHost translates Python size expressions inside one function.
type pyHost struct {
	pf     *pyFile
	fn     *ts.Node // enclosing function_definition, or nil
	params map[string]bool
	off    int
	depth  int
}

// cupyLaunches finds calls of the variables bound to RawKernels.
func (pf *pyFile) cupyLaunches(root *ts.Node, vars map[string]string) []*pyLaunch {
	var out []*pyLaunch
	ts.Walk(root, func(n *ts.Node) bool {
		if n.Type() != "call" {
			return true
		}
		fn := n.ChildByFieldName("function")
		if fn == nil || fn.Type() != "identifier" {
			return true
		}
		kname, ok := vars[pf.text(fn)]
		if !ok {
			return true
		}
		args := ts.Children(n.ChildByFieldName("arguments"))
		var pos []*ts.Node
		var shared *ts.Node
		for _, a := range args {
			if a.Type() == "keyword_argument" {
				if pf.text(a.ChildByFieldName("name")) == "shared_mem" {
					shared = a.ChildByFieldName("value")
				}
				continue
			}
			if a.Type() != "comment" {
				pos = append(pos, a)
			}
		}
		l := &pyLaunch{file: pf.rel, line: pf.line(n), kernel: kname}
		out = append(out, l)
		if len(pos) < 3 {
			l.err = "a CuPy kernel call needs (grid, block, args)"
			return true
		}
		h := &pyHost{pf: pf, fn: ancestorType(n, "function_definition"), params: map[string]bool{}, off: int(n.StartByte())}
		if h.fn != nil {
			for _, p := range ts.Children(h.fn.ChildByFieldName("parameters")) {
				name := p
				if p.Type() != "identifier" && p.NamedChildCount() > 0 {
					name = p.NamedChild(0)
				}
				h.params[pf.text(name)] = true
			}
		}
		var err error
		if l.grid, err = h.dims(pos[0]); err != nil {
			l.err = "grid: " + err.Error()
			return true
		}
		if l.block, err = h.dims(pos[1]); err != nil {
			l.err = "block: " + err.Error()
			return true
		}
		l.shared = Lit(0)
		if shared != nil {
			if l.shared, err = h.eval(shared); err != nil {
				l.err = "shared_mem: " + err.Error()
				return true
			}
		}
		argList := pos[2]
		if argList.Type() == "identifier" {
			if v := h.value(pf.text(argList)); v != nil {
				argList = v
			}
		}
		if argList.Type() != "tuple" && argList.Type() != "list" {
			l.err = "kernel arguments are not a literal tuple"
			return true
		}
		for _, a := range ts.Children(argList) {
			l.args = append(l.args, h.arg(a))
		}
		if h.fn != nil {
			ts.Walk(h.fn, func(x *ts.Node) bool {
				if x.Type() == "assert_statement" && x.NamedChildCount() > 0 {
					if e, err := h.evalAt(x.NamedChild(0), int(x.StartByte())); err == nil && isComparison(e) {
						l.checks = append(l.checks, e)
					}
				}
				return true
			})
		}
		return true
	})
	return out
}

func ancestorType(n *ts.Node, typ string) *ts.Node { return ts.Ancestor(n, typ) }

// value returns the last value assigned to name before the call, in the
// function first, then the module.
func (h *pyHost) value(name string) *ts.Node {
	v, _ := h.binding(name, h.off)
	return v
}

// binding returns the assigned value and its offset; for "a, b = x.shape"
// it returns the right side and sets the index through bindingIndex.
func (h *pyHost) binding(name string, off int) (*ts.Node, int) {
	var best *ts.Node
	bestOff := -1
	scope := h.pf.root
	if h.fn != nil {
		scope = h.fn
	}
	ts.Walk(scope, func(n *ts.Node) bool {
		if n.Type() == "function_definition" && n != h.fn {
			return false
		}
		if n.Type() != "assignment" || int(n.StartByte()) >= off {
			return true
		}
		l := n.ChildByFieldName("left")
		if l != nil && l.Type() == "identifier" && h.pf.text(l) == name {
			best, bestOff = n.ChildByFieldName("right"), int(n.StartByte())
		}
		return true
	})
	if best == nil && h.fn != nil {
		for _, v := range h.pf.assigns[name] {
			if ancestorType(v, "function_definition") == nil {
				best, bestOff = v, int(v.StartByte())
			}
		}
	}
	return best, bestOff
}

// unpacked finds "a, b = x.shape" binding name: the tensor and the index.
func (h *pyHost) unpacked(name string, off int) (string, int, bool) {
	scope := h.fn
	if scope == nil {
		scope = h.pf.root
	}
	tensor, idx, ok := "", 0, false
	ts.Walk(scope, func(n *ts.Node) bool {
		if n.Type() != "assignment" || int(n.StartByte()) >= off {
			return true
		}
		l, r := n.ChildByFieldName("left"), n.ChildByFieldName("right")
		if l == nil || r == nil || (l.Type() != "pattern_list" && l.Type() != "tuple_pattern") {
			return true
		}
		if r.Type() != "attribute" || h.pf.text(r.ChildByFieldName("attribute")) != "shape" {
			return true
		}
		for i, c := range ts.Children(l) {
			if h.pf.text(c) == name {
				tensor, idx, ok = h.pf.text(r.ChildByFieldName("object")), i, true
			}
		}
		return true
	})
	return tensor, idx, ok
}

func (h *pyHost) dims(n *ts.Node) ([3]*Expr, error) {
	out := [3]*Expr{Lit(1), Lit(1), Lit(1)}
	if n.Type() == "identifier" {
		if v := h.value(h.pf.text(n)); v != nil && (v.Type() == "tuple" || v.Type() == "list") {
			n = v
		}
	}
	items := []*ts.Node{n}
	if n.Type() == "tuple" || n.Type() == "list" {
		items = ts.Children(n)
	}
	if len(items) > 3 || len(items) == 0 {
		return out, fmt.Errorf("%d dimensions", len(items))
	}
	for i, it := range items {
		e, err := h.eval(it)
		if err != nil {
			return out, err
		}
		out[i] = e
	}
	return out, nil
}

var cupyScalarTypes = map[string]bool{"int8": true, "int16": true, "int32": true, "int64": true, "uint8": true, "uint16": true, "uint32": true,
	"uint64": true, "float16": true, "float32": true, "float64": true, "intc": true, "int_": true, "float_": true, "bool_": true}

func (h *pyHost) arg(n *ts.Node) pyArg {
	inner := n
	if n.Type() == "call" {
		fn := h.pf.text(n.ChildByFieldName("function"))
		base := fn[strings.LastIndex(fn, ".")+1:]
		args := ts.Children(n.ChildByFieldName("arguments"))
		if (cupyScalarTypes[base] || base == "int" || base == "float") && len(args) == 1 {
			inner = args[0]
			if strings.HasPrefix(base, "float") {
				a := pyArg{}
				if v, err := strconv.ParseFloat(h.pf.text(inner), 64); err == nil {
					a.value = &v
				}
				return a
			}
			e, err := h.eval(inner)
			if err != nil {
				return pyArg{err: err.Error()}
			}
			return pyArg{expr: e}
		}
	}
	if n.Type() == "identifier" {
		name := h.pf.text(n)
		if shape, err := h.shape(name, h.off); err == nil {
			return pyArg{array: true, shape: shape}
		} else if h.isArray(name) {
			return pyArg{array: true, err: err.Error()}
		}
	}
	if n.Type() == "float" {
		v, _ := strconv.ParseFloat(h.pf.text(n), 64)
		return pyArg{value: &v}
	}
	e, err := h.eval(n)
	if err != nil {
		return pyArg{err: err.Error()}
	}
	return pyArg{expr: e}
}

// isArray guesses whether a name holds an array (a parameter used with
// .size/.shape, or a value made by cupy).
func (h *pyHost) isArray(name string) bool {
	if v := h.value(name); v != nil {
		t := h.pf.text(v)
		return strings.Contains(t, "empty") || strings.Contains(t, "zeros") || strings.Contains(t, "array") || strings.Contains(t, "ones")
	}
	return h.params[name]
}

// shape returns an array's shape from what the function says about it.
func (h *pyHost) shape(name string, off int) ([]*Expr, error) {
	if h.depth > 20 {
		return nil, fmt.Errorf("reference chain too long")
	}
	h.depth++
	defer func() { h.depth-- }()
	v, voff := h.binding(name, off)
	if v != nil {
		switch {
		case v.Type() == "identifier":
			return h.shape(h.pf.text(v), voff)
		case v.Type() == "call":
			fn := h.pf.text(v.ChildByFieldName("function"))
			base := fn[strings.LastIndex(fn, ".")+1:]
			args := ts.Children(v.ChildByFieldName("arguments"))
			switch base {
			case "empty_like", "zeros_like", "ones_like", "full_like", "ascontiguousarray", "asarray":
				if len(args) > 0 && args[0].Type() == "identifier" {
					return h.shape(h.pf.text(args[0]), voff)
				}
			case "copy", "astype", "ravel":
				if obj := v.ChildByFieldName("function").ChildByFieldName("object"); obj != nil && obj.Type() == "identifier" && base != "ravel" {
					return h.shape(h.pf.text(obj), voff)
				}
			case "empty", "zeros", "ones", "full":
				if len(args) == 0 {
					break
				}
				sh := args[0]
				items := []*ts.Node{sh}
				if sh.Type() == "tuple" || sh.Type() == "list" {
					items = ts.Children(sh)
				}
				var out []*Expr
				for _, it := range items {
					e, err := h.evalAt(it, voff)
					if err != nil {
						return nil, err
					}
					out = append(out, e)
				}
				return out, nil
			}
		}
		return nil, fmt.Errorf("cannot tell the shape of %s", name)
	}
	// a parameter: facts from the function body
	var dims = map[int]*Expr{}
	var numel *Expr
	scope := h.fn
	if scope == nil {
		return nil, fmt.Errorf("cannot tell the shape of %s", name)
	}
	ts.Walk(scope, func(n *ts.Node) bool {
		if n.Type() != "assignment" {
			return true
		}
		l, r := n.ChildByFieldName("left"), n.ChildByFieldName("right")
		if l == nil || r == nil {
			return true
		}
		if l.Type() == "identifier" {
			if t, kind, i, ok := h.meta(r); ok && t == name {
				if kind == "size" && numel == nil {
					numel = Sym(h.pf.text(l))
				} else if kind == "dim" && dims[i] == nil {
					dims[i] = Sym(h.pf.text(l))
				}
			}
		}
		if (l.Type() == "pattern_list" || l.Type() == "tuple_pattern") && r.Type() == "attribute" &&
			h.pf.text(r.ChildByFieldName("attribute")) == "shape" && h.pf.text(r.ChildByFieldName("object")) == name {
			cs := ts.Children(l)
			for i, c := range cs {
				dims[i] = Sym(h.pf.text(c))
			}
		}
		return true
	})
	if len(dims) > 0 {
		out := make([]*Expr, len(dims))
		for i := range out {
			if dims[i] == nil {
				return nil, fmt.Errorf("size %d of %s is unknown", i, name)
			}
			out[i] = dims[i]
		}
		return out, nil
	}
	if numel != nil {
		return []*Expr{numel}, nil
	}
	return nil, fmt.Errorf("nothing in the Python code gives the shape of %s", name)
}

// meta recognises x.size, x.shape[i], len(x).
func (h *pyHost) meta(n *ts.Node) (tensor, kind string, idx int, ok bool) {
	switch n.Type() {
	case "attribute":
		if h.pf.text(n.ChildByFieldName("attribute")) == "size" {
			if o := n.ChildByFieldName("object"); o.Type() == "identifier" {
				return h.pf.text(o), "size", 0, true
			}
		}
	case "subscript":
		v := n.ChildByFieldName("value")
		sub := n.ChildByFieldName("subscript")
		if v != nil && sub != nil && v.Type() == "attribute" && h.pf.text(v.ChildByFieldName("attribute")) == "shape" {
			if i, err := strconv.Atoi(h.pf.text(sub)); err == nil && i >= 0 {
				return h.pf.text(v.ChildByFieldName("object")), "dim", i, true
			}
		}
	case "call":
		if h.pf.text(n.ChildByFieldName("function")) == "len" {
			if a := ts.Children(n.ChildByFieldName("arguments")); len(a) == 1 && a[0].Type() == "identifier" {
				return h.pf.text(a[0]), "dim", 0, true
			}
		}
	}
	return "", "", 0, false
}

func (h *pyHost) eval(n *ts.Node) (*Expr, error) { return h.evalAt(n, h.off) }

func (h *pyHost) evalAt(n *ts.Node, off int) (*Expr, error) {
	if h.depth > 30 {
		return nil, fmt.Errorf("expression too deep")
	}
	h.depth++
	defer func() { h.depth-- }()
	txt := h.pf.text(n)
	switch n.Type() {
	case "integer":
		v, err := strconv.ParseInt(strings.ReplaceAll(txt, "_", ""), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %s", txt)
		}
		return Lit(v), nil
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return h.evalAt(n.NamedChild(0), off)
		}
	case "unary_operator":
		x, err := h.evalAt(n.ChildByFieldName("argument"), off)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(txt, "-") {
			return Bin("-", Lit(0), x), nil
		}
		return x, nil
	case "binary_operator", "comparison_operator", "boolean_operator":
		var op string
		var l, r *ts.Node
		if n.Type() == "comparison_operator" {
			if n.NamedChildCount() != 2 || n.ChildCount() != 3 {
				return nil, fmt.Errorf("chained comparison %s", txt)
			}
			l, r, op = n.NamedChild(0), n.NamedChild(1), h.pf.text(n.Child(1))
		} else {
			l, r = n.ChildByFieldName("left"), n.ChildByFieldName("right")
			op = h.pf.text(n.ChildByFieldName("operator"))
		}
		a, err := h.evalAt(l, off)
		if err != nil {
			return nil, err
		}
		b, err := h.evalAt(r, off)
		if err != nil {
			return nil, err
		}
		switch op {
		case "+", "-", "*", "%", "==", "!=", "<", "<=", ">", ">=":
			return Bin(op, a, b), nil
		case "//":
			return Bin("/", a, b), nil
		case "and":
			return Bin("&&", a, b), nil
		}
		return nil, fmt.Errorf("operator %s in %s", op, oneLine(txt))
	case "attribute", "subscript":
		if t, kind, i, ok := h.meta(n); ok {
			shp, err := h.shape(t, off)
			if err != nil {
				return nil, err
			}
			if kind == "size" {
				return product(shp), nil
			}
			if i >= len(shp) {
				return nil, fmt.Errorf("%s has no dimension %d", t, i)
			}
			return shp[i], nil
		}
	case "identifier":
		v, voff := h.binding(txt, off)
		if v != nil {
			if _, _, _, ok := h.meta(v); ok {
				return Sym(txt), nil
			}
			return h.evalAt(v, voff)
		}
		if _, _, ok := h.unpacked(txt, off); ok {
			return Sym(txt), nil
		}
		if h.params[txt] {
			return Sym(txt), nil
		}
		return nil, fmt.Errorf("cannot resolve %s", txt)
	case "call":
		fn := h.pf.text(n.ChildByFieldName("function"))
		base := fn[strings.LastIndex(fn, ".")+1:]
		args := ts.Children(n.ChildByFieldName("arguments"))
		if _, _, _, ok := h.meta(n); ok {
			t, _, i, _ := h.meta(n)
			shp, err := h.shape(t, off)
			if err != nil {
				return nil, err
			}
			if i >= len(shp) {
				return nil, fmt.Errorf("%s has no dimension %d", t, i)
			}
			return shp[i], nil
		}
		switch {
		case (cupyScalarTypes[base] || base == "int") && len(args) == 1:
			return h.evalAt(args[0], off)
		case (base == "min" || base == "max") && len(args) == 2:
			a, err := h.evalAt(args[0], off)
			if err != nil {
				return nil, err
			}
			b, err := h.evalAt(args[1], off)
			if err != nil {
				return nil, err
			}
			return &Expr{Op: base, L: a, R: b}, nil
		case ceilDivRE.MatchString(base) && len(args) == 2:
			a, err := h.evalAt(args[0], off)
			if err != nil {
				return nil, err
			}
			b, err := h.evalAt(args[1], off)
			if err != nil {
				return nil, err
			}
			return CeilDiv(a, b), nil
		}
	}
	return nil, fmt.Errorf("cannot evaluate %s", oneLine(txt))
}

// inferCuPy builds a spec from a CuPy launch.
func inferCuPy(k *item, closure []*item, l *pyLaunch, ft features) inference {
	fail := func(format string, a ...any) inference { return inference{reason: fmt.Sprintf(format, a...)} }
	if l.err != "" {
		return fail("CuPy launch at %s:%d: %s", l.file, l.line, l.err)
	}
	f := k.file
	kps := kernelParams(f, k.node)
	if k.template != nil {
		return fail("template kernels launched from CuPy are not analysed")
	}
	if len(l.args) != len(kps) {
		return fail("the CuPy launch at %s:%d passes %d arguments to %d parameters", l.file, l.line, len(l.args), len(kps))
	}
	spec := &Spec{Schema: SpecSchema, Name: k.names[0], Class: classOf(ft), Deterministic: !ft.floatAtomic}
	aa := &accessAnalysis{f: f, funcs: map[string]*item{}}
	for _, it := range closure {
		if it.kind == itemDevice || it.kind == itemConstFn {
			aa.funcs[it.names[0]] = it
		}
	}
	acc := aa.params(k)
	sizes := map[string]*Expr{}
	for i, kp := range kps {
		if !kp.pointer && l.args[i].expr != nil {
			sizes[kp.name] = l.args[i].expr
		}
	}
	for i, kp := range kps {
		dt, ok := dtypeOf(kp.base)
		if !ok {
			return fail("parameter %s has type %s, which has no dtype", kp.name, kp.base)
		}
		a := l.args[i]
		if a.array && a.shape == nil && strings.HasPrefix(a.err, "nothing in the Python code") {
			if shp := shapeFromIndexing(k, kp.name, sizes); shp != nil {
				a.shape, a.err = shp, ""
			}
		}
		if a.err != "" {
			return fail("argument %d (%s): %s", i+1, kp.name, a.err)
		}
		prm := Param{Name: kp.name, CType: kp.ctype, DType: dt}
		if kp.pointer {
			if !a.array {
				return fail("argument %d (%s) is not an array", i+1, kp.name)
			}
			prm.Kind = "pointer"
			if x := acc[kp.name]; x != nil && strings.HasPrefix(kp.ctype, "const ") {
				x.write = false
			}
			switch x := acc[kp.name]; {
			case x != nil && x.read && x.write:
				prm.Role = "inout"
			case x != nil && x.write:
				prm.Role = "output"
			default:
				prm.Role = "input"
			}
			for _, d := range a.shape {
				prm.Shape = append(prm.Shape, d.String())
			}
		} else {
			prm.Kind, prm.Role = "scalar", "scalar"
			switch {
			case a.array:
				return fail("argument %d (%s) is an array for a scalar parameter", i+1, kp.name)
			case isIntDType(dt) && a.expr != nil && a.expr.Op != "lit":
				prm.Role, prm.Expr = "size", a.expr.String()
			case isIntDType(dt) && a.expr != nil:
				v := float64(a.expr.Val)
				prm.Value = &v
			case a.value != nil:
				prm.Value = a.value
			}
		}
		spec.Params = append(spec.Params, prm)
	}
	for i := range 3 {
		spec.Launch.Grid[i] = l.grid[i].String()
		spec.Launch.Block[i] = l.block[i].String()
	}
	spec.Launch.SharedBytes = l.shared.String()
	cons := append([]*Expr(nil), l.checks...)
	cons = append(cons, tileConstraints(k, kps, spec, l.grid)...)
	finishSpec(spec, cons)
	if spec.Class == ClassRowReduction || spec.Class == ClassScan || spec.Class == ClassMatmulTile || spec.Class == ClassHistogram {
		spec.ReductionLength = reductionLength(spec)
	}
	return inference{spec: spec}
}
