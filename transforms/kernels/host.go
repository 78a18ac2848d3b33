package kernels

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// host analyses the host function around a launch site: local bindings,
// tensors and their shapes as expressions of size symbols.
type host struct {
	ctx    context.Context
	p      *ts.Parser
	f      *cudaFile
	items  []*item // flattened items of the file (macros, constants, functions)
	fn     *ts.Node
	params map[string]string // host function parameter -> type text
	binds  []binding
	facts  map[string]*tensorFacts // by root tensor name
	trees  []*ts.Tree              // snippet trees, closed by close()
	depth  int
	over   []map[string]*Expr
	// checks are the TORCH_CHECK conjuncts (node, src) of the function.
	checks []snip
}

type snip struct {
	n   *ts.Node
	src []byte
}

type binding struct {
	name  string
	typ   string
	value *ts.Node // initializer / right-hand side (nil for "T x;")
	decl  *ts.Node // the declaration node
	off   int
	// ctor is "(args)" of a declaration the grammar reads as a function
	// declarator, e.g. "dim3 block(TILE, TILE)".
	ctor string
}

type tensorFacts struct {
	rank     int
	dims     map[int]*Expr
	numel    *Expr
	explicit []*Expr // shape given at creation
	hasExpl  bool
}

func (h *host) close() {
	for _, t := range h.trees {
		t.Close()
	}
	h.trees = nil
}

func newHost(ctx context.Context, p *ts.Parser, f *cudaFile, items []*item, fn *ts.Node) *host {
	h := &host{ctx: ctx, p: p, f: f, items: items, fn: fn, params: map[string]string{}, facts: map[string]*tensorFacts{}}
	if fn == nil {
		return h
	}
	if d := fn.ChildByFieldName("declarator"); d != nil {
		for d != nil && d.Type() != "function_declarator" {
			d = d.ChildByFieldName("declarator")
		}
		if d != nil {
			if pl := d.ChildByFieldName("parameters"); pl != nil {
				for _, pd := range ts.Children(pl) {
					if !strings.Contains(pd.Type(), "parameter_declaration") {
						continue
					}
					nm := declName(f, pd.ChildByFieldName("declarator"))
					if t := pd.ChildByFieldName("type"); t != nil && nm != "" {
						h.params[nm] = f.text(t)
					}
				}
			}
		}
	}
	body := fn.ChildByFieldName("body")
	ts.Walk(body, func(n *ts.Node) bool {
		switch n.Type() {
		case "declaration":
			typ := ""
			if t := n.ChildByFieldName("type"); t != nil {
				typ = f.text(t)
			}
			for _, d := range fieldChildren(n, "declarator") {
				b := binding{typ: typ, decl: n, off: int(d.StartByte())}
				if d.Type() == "init_declarator" {
					b.name = declName(f, d.ChildByFieldName("declarator"))
					b.value = d.ChildByFieldName("value")
				} else if d.Type() == "function_declarator" {
					b.name = declName(f, d.ChildByFieldName("declarator"))
					if pl := d.ChildByFieldName("parameters"); pl != nil {
						b.ctor = f.text(pl)
					}
				} else {
					b.name = declName(f, d)
				}
				if b.name != "" {
					h.binds = append(h.binds, b)
				}
			}
		case "assignment_expression":
			l := n.ChildByFieldName("left")
			if l != nil && l.Type() == "identifier" && n.Child(1) != nil && n.Child(1).Type() == "=" {
				h.binds = append(h.binds, binding{name: f.text(l), value: n.ChildByFieldName("right"), off: int(n.StartByte())})
			}
		case "call_expression":
			fnn := n.ChildByFieldName("function")
			if fnn != nil && (f.text(fnn) == "TORCH_CHECK" || f.text(fnn) == "TORCH_INTERNAL_ASSERT") {
				if args := ts.Children(n.ChildByFieldName("arguments")); len(args) > 0 {
					for _, c := range conjuncts(args[0]) {
						h.checks = append(h.checks, snip{c, f.src})
					}
				}
			}
		case "lambda_expression":
			return true
		}
		return true
	})
	h.buildFacts()
	return h
}

func conjuncts(n *ts.Node) []*ts.Node {
	for n.Type() == "parenthesized_expression" && n.NamedChildCount() == 1 {
		n = n.NamedChild(0)
	}
	if n.Type() == "binary_expression" && n.Child(1) != nil && n.Child(1).Type() == "&&" {
		return append(conjuncts(n.ChildByFieldName("left")), conjuncts(n.ChildByFieldName("right"))...)
	}
	return []*ts.Node{n}
}

// lookup returns the last binding of name before off.
func (h *host) lookup(name string, off int) *binding {
	var found *binding
	for i := range h.binds {
		b := &h.binds[i]
		if b.name == name && b.off < off {
			found = b
		}
	}
	return found
}

func isTensorType(t string) bool {
	t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "const"))
	return strings.HasSuffix(t, "Tensor") || strings.HasSuffix(t, "Tensor&")
}

// tensorRoot follows aliases (empty_like, contiguous, clone, ...) to the
// tensor variable whose shape facts hold.
func (h *host) tensorRoot(name string, off int) (string, bool) {
	for range 20 {
		b := h.lookup(name, off)
		if b == nil {
			if t, ok := h.params[name]; ok && isTensorType(t) {
				return name, true
			}
			return name, false
		}
		if b.value == nil {
			return name, isTensorType(b.typ)
		}
		v := stripCasts(b.value, h.f.src)
		if src, ok := aliasOf(v, h.f.src); ok {
			if src == name {
				off = b.off
				continue
			}
			name, off = src, b.off
			continue
		}
		if isCreation(v, h.f.src) {
			return name + "@" + strconv.Itoa(b.off), true
		}
		return name, isTensorType(b.typ)
	}
	return name, false
}

var aliasFuncs = map[string]bool{"empty_like": true, "zeros_like": true, "ones_like": true, "full_like": true, "rand_like": true, "randn_like": true}

// aliasOf reports the tensor a value has the shape of.
func aliasOf(v *ts.Node, src []byte) (string, bool) {
	if v.Type() == "identifier" {
		return ts.Text(v, src), true
	}
	if v.Type() != "call_expression" {
		return "", false
	}
	fn := v.ChildByFieldName("function")
	args := ts.Children(v.ChildByFieldName("arguments"))
	if fn.Type() == "field_expression" {
		obj := fn.ChildByFieldName("argument")
		field := ts.Text(fn.ChildByFieldName("field"), src)
		if !SameShapeMethods[field] || obj == nil {
			return "", false
		}
		return aliasOf(obj, src) // a.contiguous().to(at::kFloat): a chain of them
	}
	if aliasFuncs[lastName(ts.Text(fn, src))] && len(args) > 0 && args[0].Type() == "identifier" {
		return ts.Text(args[0], src), true
	}
	return "", false
}

// dataRoot is the tensor whose data v is: v's aliasOf, or a view of one
// (x.view({-1}), x.contiguous().reshape(...)): a pointer into it points
// into the tensor.
func dataRoot(v *ts.Node, src []byte) (string, bool) {
	if v.Type() == "call_expression" {
		if fn := v.ChildByFieldName("function"); fn.Type() == "field_expression" {
			if ViewMethods[ts.Text(fn.ChildByFieldName("field"), src)] {
				return dataRoot(stripCasts(fn.ChildByFieldName("argument"), src), src)
			}
		}
	}
	return aliasOf(v, src)
}

var creationFuncs = map[string]bool{"empty": true, "zeros": true, "ones": true, "full": true, "rand": true, "randn": true, "new_empty": true, "new_zeros": true}

func isCreation(v *ts.Node, src []byte) bool {
	if v.Type() != "call_expression" {
		return false
	}
	return creationFuncs[lastName(ts.Text(v.ChildByFieldName("function"), src))]
}

func lastName(s string) string {
	if i := strings.LastIndexAny(s, ":."); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// stripCasts removes casts and parentheses around an expression.
func stripCasts(n *ts.Node, src []byte) *ts.Node {
	for n != nil {
		switch n.Type() {
		case "parenthesized_expression":
			if n.NamedChildCount() != 1 {
				return n
			}
			n = n.NamedChild(0)
		case "cast_expression":
			n = n.ChildByFieldName("value")
		case "call_expression":
			fn := n.ChildByFieldName("function")
			name := ts.Text(fn, src)
			args := ts.Children(n.ChildByFieldName("arguments"))
			if fn.Type() == "template_function" && len(args) == 1 {
				base := ts.Text(fn.ChildByFieldName("name"), src)
				if base == "static_cast" || base == "reinterpret_cast" || base == "const_cast" {
					n = args[0]
					continue
				}
			}
			if len(args) == 1 && (name == "int" || name == "int64_t" || name == "size_t" || name == "long" || name == "unsigned") {
				n = args[0]
				continue
			}
			return n
		default:
			return n
		}
	}
	return n
}

// meta recognises t.numel(), t.size(i), t.sizes()[i], t.dim().
type meta struct {
	tensor string
	kind   string // numel, size, dim
	index  int
}

func metaOf(n *ts.Node, src []byte) (meta, bool) {
	n = stripCasts(n, src)
	if n.Type() == "subscript_expression" {
		arg := stripCasts(n.ChildByFieldName("argument"), src)
		idx := n.ChildByFieldName("indices")
		if idx == nil {
			idx = n.ChildByFieldName("index")
		}
		if m, ok := metaOf(arg, src); ok && m.kind == "sizes" && idx != nil {
			txt := strings.Trim(ts.Text(idx, src), "[] ")
			if v, err := strconv.Atoi(txt); err == nil {
				return meta{m.tensor, "size", v}, true
			}
		}
		return meta{}, false
	}
	if n.Type() != "call_expression" {
		return meta{}, false
	}
	fn := n.ChildByFieldName("function")
	if fn.Type() != "field_expression" {
		return meta{}, false
	}
	obj := fn.ChildByFieldName("argument")
	if obj.Type() != "identifier" {
		return meta{}, false
	}
	field := ts.Text(fn.ChildByFieldName("field"), src)
	args := ts.Children(n.ChildByFieldName("arguments"))
	t := ts.Text(obj, src)
	switch field {
	case "numel":
		return meta{t, "numel", 0}, true
	case "dim", "ndimension":
		return meta{t, "dim", 0}, true
	case "sizes":
		return meta{t, "sizes", 0}, true
	case "size":
		if len(args) == 1 {
			if v, err := strconv.Atoi(strings.TrimSpace(ts.Text(args[0], src))); err == nil {
				return meta{t, "size", v}, true
			}
		}
	}
	return meta{}, false
}

func (h *host) factsOf(root string) *tensorFacts {
	tf := h.facts[root]
	if tf == nil {
		tf = &tensorFacts{dims: map[int]*Expr{}}
		h.facts[root] = tf
	}
	return tf
}

// buildFacts records what the function says about tensor shapes.
func (h *host) buildFacts() {
	src := h.f.src
	for _, b := range h.binds {
		if b.value == nil {
			continue
		}
		v := stripCasts(b.value, src)
		if m, ok := metaOf(v, src); ok {
			root, _ := h.tensorRoot(m.tensor, b.off)
			tf := h.factsOf(root)
			switch m.kind {
			case "numel":
				if tf.numel == nil {
					tf.numel = Sym(b.name)
				}
			case "size":
				if _, ok := tf.dims[m.index]; !ok {
					tf.dims[m.index] = Sym(b.name)
				}
			}
			continue
		}
	}
	h.equalities()
	// t.size(i) / t.numel() used directly (not through a variable): a symbol
	// named after the tensor, e.g. x_size1.
	if h.fn != nil {
		ts.Walk(h.fn.ChildByFieldName("body"), func(n *ts.Node) bool {
			if n.Type() != "call_expression" {
				return true
			}
			for _, c := range h.checks {
				if n.StartByte() >= c.n.StartByte() && n.EndByte() <= c.n.EndByte() {
					return true // equalities in checks relate sizes; they are not new sizes
				}
			}
			m, ok := metaOf(n, src)
			if !ok || (m.kind != "size" && m.kind != "numel") || m.index < 0 {
				return true
			}
			root, isT := h.tensorRoot(m.tensor, int(n.StartByte()))
			if !isT {
				return true
			}
			tf := h.factsOf(root)
			if tf.hasExpl {
				return true
			}
			if m.kind == "size" && tf.dims[m.index] == nil {
				tf.dims[m.index] = Sym(fmt.Sprintf("%s_size%d", m.tensor, m.index))
			}
			if m.kind == "numel" && tf.numel == nil {
				tf.numel = Sym(m.tensor + "_numel")
			}
			return true
		})
	}
	// equalities again, now that direct uses have names
	h.equalities()
	// shapes given at creation: torch::empty({m, n}, ...)
	for _, b := range h.binds {
		if b.value == nil {
			continue
		}
		v := stripCasts(b.value, src)
		if isCreation(v, src) {
			root := b.name + "@" + strconv.Itoa(b.off)
			tf := h.factsOf(root)
			args := ts.Children(v.ChildByFieldName("arguments"))
			if len(args) > 0 && args[0].Type() == "initializer_list" {
				tf.hasExpl = true
				for _, d := range ts.Children(args[0]) {
					e, err := h.tr(d, src, b.off)
					if err != nil {
						tf.explicit = nil
						tf.hasExpl = false
						break
					}
					tf.explicit = append(tf.explicit, e)
				}
			}
		}
	}
}

// equalities records TORCH_CHECK facts: ranks and size equalities.
func (h *host) equalities() {
	for range 3 {
		for _, c := range h.checks {
			n := c.n
			if n.Type() != "binary_expression" || n.Child(1) == nil || n.Child(1).Type() != "==" {
				continue
			}
			l, r := n.ChildByFieldName("left"), n.ChildByFieldName("right")
			h.equate(l, r, int(n.StartByte()))
			h.equate(r, l, int(n.StartByte()))
		}
	}
}

// equate records "meta(l) == r" when l is tensor metadata not yet known.
func (h *host) equate(l, r *ts.Node, off int) {
	src := h.f.src
	m, ok := metaOf(l, src)
	if !ok {
		return
	}
	root, _ := h.tensorRoot(m.tensor, off)
	tf := h.factsOf(root)
	if m.kind == "dim" {
		if v, err := strconv.Atoi(strings.TrimSpace(ts.Text(r, src))); err == nil && tf.rank == 0 {
			tf.rank = v
		}
		return
	}
	if m.kind == "size" {
		if _, ok := tf.dims[m.index]; ok {
			return
		}
	} else if tf.numel != nil || m.kind != "numel" {
		return
	}
	e, err := h.tr(r, src, off)
	if err != nil {
		return
	}
	if m.kind == "size" {
		tf.dims[m.index] = e
	} else {
		tf.numel = e
	}
}

// shape returns the shape of tensor variable name at off.
func (h *host) shape(name string, off int) ([]*Expr, error) {
	root, ok := h.tensorRoot(name, off)
	if !ok {
		return nil, fmt.Errorf("%s is not a tensor the host function defines", name)
	}
	tf := h.facts[root]
	if tf == nil {
		return nil, fmt.Errorf("nothing in the host code gives the shape of %s", name)
	}
	if tf.hasExpl {
		return tf.explicit, nil
	}
	rank := tf.rank
	for i := range tf.dims {
		if i >= 0 && i+1 > rank && tf.rank == 0 {
			rank = i + 1
		}
	}
	if rank == 0 {
		if tf.numel != nil {
			return []*Expr{tf.numel}, nil
		}
		return nil, fmt.Errorf("nothing in the host code gives the shape of %s", name)
	}
	out := make([]*Expr, rank)
	for i := range rank {
		d := tf.dims[i]
		if d == nil {
			d = tf.dims[i-rank]
		}
		if d == nil {
			if rank == 1 && tf.numel != nil {
				d = tf.numel
			} else {
				return nil, fmt.Errorf("size %d of %s is unknown", i, name)
			}
		}
		out[i] = d
	}
	return out, nil
}

func product(es []*Expr) *Expr {
	var p *Expr
	for _, e := range es {
		if p == nil {
			p = e
		} else {
			p = Bin("*", p, e)
		}
	}
	if p == nil {
		return Lit(1)
	}
	return p
}

var ceilDivRE = regexp.MustCompile(`(?i)^(ceil_?div|div_?up|div_round_up|cdiv|ceildiv|divup|round_up_div|thcceildiv)$`)

var typeSizes = map[string]int64{
	"float": 4, "double": 8, "int": 4, "int32_t": 4, "unsigned": 4, "unsigned int": 4, "uint32_t": 4,
	"int64_t": 8, "long": 8, "long long": 8, "size_t": 8, "uint64_t": 8, "half": 2, "__half": 2,
	"at::Half": 2, "c10::Half": 2, "__nv_bfloat16": 2, "at::BFloat16": 2, "char": 1, "int8_t": 1,
	"uint8_t": 1, "unsigned char": 1, "bool": 1, "short": 2, "int16_t": 2, "float2": 8, "float4": 16,
	"int2": 8, "int4": 16, "half2": 4, "__half2": 4,
}

// tr translates a C++ integer expression of the host code into an Expr.
func (h *host) tr(n *ts.Node, src []byte, off int) (*Expr, error) {
	if h.depth > 40 {
		return nil, fmt.Errorf("expression too deep")
	}
	h.depth++
	defer func() { h.depth-- }()
	if n == nil {
		return nil, fmt.Errorf("missing expression")
	}
	txt := ts.Text(n, src)
	switch n.Type() {
	case "number_literal":
		t := strings.TrimRight(strings.ReplaceAll(txt, "'", ""), "uUlL")
		v, err := strconv.ParseInt(t, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not an integer", txt)
		}
		return Lit(v), nil
	case "true":
		return Lit(1), nil
	case "false":
		return Lit(0), nil
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return h.tr(n.NamedChild(0), src, off)
		}
	case "cast_expression":
		return h.tr(n.ChildByFieldName("value"), src, off)
	case "unary_expression":
		x, err := h.tr(n.ChildByFieldName("argument"), src, off)
		if err != nil {
			return nil, err
		}
		switch ts.Text(n.Child(0), src) {
		case "-":
			if x.Op == "lit" {
				return Lit(-x.Val), nil
			}
			return &Expr{Op: "neg", L: x}, nil
		case "+":
			return x, nil
		}
		return nil, fmt.Errorf("unsupported operator in %s", txt)
	case "binary_expression":
		op := ts.Text(n.Child(1), src)
		l, err := h.tr(n.ChildByFieldName("left"), src, off)
		if err != nil {
			return nil, err
		}
		r, err := h.tr(n.ChildByFieldName("right"), src, off)
		if err != nil {
			return nil, err
		}
		switch op {
		case "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&":
			return Bin(op, l, r), nil
		case "<<":
			if r.Op == "lit" && r.Val >= 0 && r.Val < 62 {
				return Bin("*", l, Lit(1<<r.Val)), nil
			}
		case ">>":
			if r.Op == "lit" && r.Val >= 0 && r.Val < 62 {
				return Bin("/", l, Lit(1<<r.Val)), nil
			}
		}
		return nil, fmt.Errorf("unsupported operator %s in %s", op, txt)
	case "sizeof_expression":
		t := n.ChildByFieldName("type")
		if t == nil {
			t = n.ChildByFieldName("value")
		}
		name := strings.TrimSpace(strings.Trim(ts.Text(t, src), "()"))
		if v, ok := typeSizes[name]; ok {
			return Lit(v), nil
		}
		return nil, fmt.Errorf("unknown size of %s", name)
	case "identifier", "qualified_identifier":
		return h.ident(txt, off)
	case "call_expression", "subscript_expression":
		return h.call(n, src, off)
	}
	return nil, fmt.Errorf("cannot evaluate %q", oneLine(txt))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func (h *host) ident(name string, off int) (*Expr, error) {
	for i := len(h.over) - 1; i >= 0; i-- {
		if e, ok := h.over[i][name]; ok {
			return e, nil
		}
	}
	if b := h.lookup(name, off); b != nil && b.value != nil {
		v := stripCasts(b.value, h.f.src)
		if m, ok := metaOf(v, h.f.src); ok && (m.kind == "numel" || m.kind == "size") {
			root, _ := h.tensorRoot(m.tensor, b.off)
			if m.kind == "numel" {
				if shp, err := h.shape(m.tensor, b.off); err == nil && !(len(shp) == 1 && shp[0].Op == "sym" && shp[0].Name == name) {
					return product(shp), nil
				}
				return Sym(name), nil
			}
			if tf := h.facts[root]; tf != nil {
				if d := tf.dims[m.index]; d != nil && !(d.Op == "sym" && d.Name == name) {
					return d, nil
				}
			}
			return Sym(name), nil
		}
		return h.tr(b.value, h.f.src, b.off)
	}
	if t, ok := h.params[name]; ok {
		if isIntType(t) {
			return Sym(name), nil
		}
		return nil, fmt.Errorf("%s is a %s parameter of the host function", name, strings.TrimSpace(t))
	}
	short := lastName(name)
	for i := len(h.items) - 1; i >= 0; i-- {
		it := h.items[i]
		if !hasName(it, short) {
			continue
		}
		switch it.kind {
		case itemMacro:
			if it.node.Type() == "preproc_def" {
				v := it.node.ChildByFieldName("value")
				if v == nil {
					return nil, fmt.Errorf("macro %s has no value", short)
				}
				return h.snippet(ts.Text(v, it.file.src), off)
			}
		case itemConstVar, itemType:
			if e, err := h.constInit(it, short, off); err == nil {
				return e, nil
			}
		}
	}
	return nil, fmt.Errorf("cannot resolve %s", name)
}

func hasName(it *item, name string) bool {
	for _, n := range it.names {
		if n == name {
			return true
		}
	}
	return false
}

// constInit translates the initializer of constant name declared by it.
func (h *host) constInit(it *item, name string, off int) (*Expr, error) {
	var val *ts.Node
	ts.Walk(it.node, func(n *ts.Node) bool {
		if val != nil {
			return false
		}
		switch n.Type() {
		case "init_declarator":
			if declName(it.file, n.ChildByFieldName("declarator")) == name {
				val = n.ChildByFieldName("value")
			}
			return false
		case "enumerator":
			if nm := n.ChildByFieldName("name"); nm != nil && ts.Text(nm, it.file.src) == name {
				val = n.ChildByFieldName("value")
			}
			return false
		}
		return true
	})
	if val == nil {
		return nil, fmt.Errorf("no initializer for %s", name)
	}
	if val.Type() == "initializer_list" && val.NamedChildCount() == 1 {
		val = val.NamedChild(0)
	}
	return h.tr(val, it.file.src, off)
}

func isIntType(t string) bool {
	t = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(t, "const", ""), "&", ""))
	switch t {
	case "int", "int64_t", "int32_t", "long", "long long", "size_t", "unsigned", "unsigned int", "uint32_t", "uint64_t", "short", "unsigned long", "c10::SymInt":
		return true
	}
	return false
}

// snippet parses text as an expression and translates it.
func (h *host) snippet(text string, off int) (*Expr, error) {
	src := []byte("auto __pallasify_x = (" + text + ");\n")
	tree, err := h.p.Parse(h.ctx, src)
	if err != nil {
		return nil, err
	}
	h.trees = append(h.trees, tree)
	var val *ts.Node
	ts.Walk(tree.Root(), func(n *ts.Node) bool {
		if val == nil && n.Type() == "init_declarator" {
			val = n.ChildByFieldName("value")
		}
		return val == nil
	})
	if val == nil || tree.ErrorCount() > 0 {
		return nil, fmt.Errorf("cannot parse %q", oneLine(text))
	}
	return h.tr(val, src, off)
}

func (h *host) call(n *ts.Node, src []byte, off int) (*Expr, error) {
	if m, ok := metaOf(n, src); ok {
		switch m.kind {
		case "numel":
			shp, err := h.shape(m.tensor, off)
			if err != nil {
				return nil, err
			}
			return product(shp), nil
		case "size":
			shp, err := h.shape(m.tensor, off)
			if err != nil {
				return nil, err
			}
			i := m.index
			if i < 0 {
				i += len(shp)
			}
			if i < 0 || i >= len(shp) {
				return nil, fmt.Errorf("%s has no dimension %d", m.tensor, m.index)
			}
			return shp[i], nil
		case "dim":
			shp, err := h.shape(m.tensor, off)
			if err != nil {
				return nil, err
			}
			return Lit(int64(len(shp))), nil
		}
	}
	if n.Type() != "call_expression" {
		return nil, fmt.Errorf("cannot evaluate %q", oneLine(ts.Text(n, src)))
	}
	if s := stripCasts(n, src); s != n {
		return h.tr(s, src, off)
	}
	fn := n.ChildByFieldName("function")
	args := ts.Children(n.ChildByFieldName("arguments"))
	name := ts.Text(fn, src)
	if fn.Type() == "template_function" {
		name = ts.Text(fn.ChildByFieldName("name"), src)
	}
	short := lastName(name)
	switch {
	case (short == "min" || short == "max") && len(args) == 2:
		a, err := h.tr(args[0], src, off)
		if err != nil {
			return nil, err
		}
		b, err := h.tr(args[1], src, off)
		if err != nil {
			return nil, err
		}
		if a.Op == "lit" && b.Op == "lit" {
			v, _ := evalBin(short, a.Val, b.Val)
			return Lit(v), nil
		}
		return &Expr{Op: short, L: a, R: b}, nil
	case ceilDivRE.MatchString(short) && len(args) == 2:
		a, err := h.tr(args[0], src, off)
		if err != nil {
			return nil, err
		}
		b, err := h.tr(args[1], src, off)
		if err != nil {
			return nil, err
		}
		return CeilDiv(a, b), nil
	}
	// function-like macros and single-return functions of the file
	for i := len(h.items) - 1; i >= 0; i-- {
		it := h.items[i]
		if !hasName(it, short) {
			continue
		}
		if it.kind == itemMacro && it.node.Type() == "preproc_function_def" {
			return h.expandMacro(it, args, src, off)
		}
		if it.kind == itemHostFn || it.kind == itemConstFn || it.kind == itemDevice {
			return h.inline(it, args, src, off)
		}
	}
	return nil, fmt.Errorf("cannot evaluate call %q", oneLine(ts.Text(n, src)))
}

func (h *host) expandMacro(it *item, args []*ts.Node, src []byte, off int) (*Expr, error) {
	f := it.file
	var params []string
	if pl := it.node.ChildByFieldName("parameters"); pl != nil {
		for _, c := range ts.Children(pl) {
			params = append(params, ts.Text(c, f.src))
		}
	}
	v := it.node.ChildByFieldName("value")
	if v == nil || len(params) != len(args) {
		return nil, fmt.Errorf("cannot expand macro %s", it.names[0])
	}
	over := map[string]*Expr{}
	for i, p := range params {
		e, err := h.tr(args[i], src, off)
		if err != nil {
			return nil, err
		}
		over[p] = e
	}
	h.over = append(h.over, over)
	defer func() { h.over = h.over[:len(h.over)-1] }()
	return h.snippet(ts.Text(v, f.src), off)
}

func (h *host) inline(it *item, args []*ts.Node, src []byte, off int) (*Expr, error) {
	f := it.file
	fn := it.node
	body := fn.ChildByFieldName("body")
	if body == nil || body.NamedChildCount() != 1 || body.NamedChild(0).Type() != "return_statement" {
		return nil, fmt.Errorf("cannot evaluate function %s", it.names[0])
	}
	ret := body.NamedChild(0)
	if ret.NamedChildCount() != 1 {
		return nil, fmt.Errorf("cannot evaluate function %s", it.names[0])
	}
	d := fn.ChildByFieldName("declarator")
	for d != nil && d.Type() != "function_declarator" {
		d = d.ChildByFieldName("declarator")
	}
	if d == nil {
		return nil, fmt.Errorf("cannot evaluate function %s", it.names[0])
	}
	var params []string
	for _, pd := range ts.Children(d.ChildByFieldName("parameters")) {
		params = append(params, declName(f, pd.ChildByFieldName("declarator")))
	}
	if len(params) != len(args) {
		return nil, fmt.Errorf("cannot evaluate function %s", it.names[0])
	}
	over := map[string]*Expr{}
	for i, p := range params {
		e, err := h.tr(args[i], src, off)
		if err != nil {
			return nil, err
		}
		over[p] = e
	}
	h.over = append(h.over, over)
	defer func() { h.over = h.over[:len(h.over)-1] }()
	return h.tr(ret.NamedChild(0), f.src, off)
}

// dim3 translates a launch dimension: a dim3 variable, a dim3(...) call or an
// integer expression.
func (h *host) dim3(n *ts.Node, src []byte, off int) ([3]*Expr, error) {
	one := [3]*Expr{Lit(1), Lit(1), Lit(1)}
	fromArgs := func(args []*ts.Node, asrc []byte, aoff int) ([3]*Expr, error) {
		out := one
		if len(args) > 3 {
			return out, fmt.Errorf("dim3 with %d arguments", len(args))
		}
		for i, a := range args {
			e, err := h.tr(a, asrc, aoff)
			if err != nil {
				return out, err
			}
			out[i] = e
		}
		return out, nil
	}
	s := stripCasts(n, src)
	if s.Type() == "call_expression" && lastName(ts.Text(s.ChildByFieldName("function"), src)) == "dim3" {
		return fromArgs(ts.Children(s.ChildByFieldName("arguments")), src, off)
	}
	if s.Type() == "identifier" {
		if b := h.lookup(ts.Text(s, src), off); b != nil && strings.Contains(b.typ, "dim3") {
			if b.ctor != "" {
				return h.dim3Text("dim3"+b.ctor, b.off)
			}
			if b.value == nil {
				return one, nil
			}
			v := b.value
			switch v.Type() {
			case "argument_list", "initializer_list":
				return fromArgs(ts.Children(v), h.f.src, b.off)
			}
			return h.dim3(v, h.f.src, b.off)
		}
	}
	e, err := h.tr(n, src, off)
	if err != nil {
		return one, err
	}
	out := one
	out[0] = e
	return out, nil
}
