package pallas

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// kind says what a value depends on.
type kind int

const (
	kUniform kind = iota // the same for every thread: a Python number or constant
	kIndex               // a function of the thread's position only (no data)
	kData                // depends on loaded data
)

// val is a translated C expression.
type val struct {
	py   string // Python expression
	ct   string // float, double, int, uint, int64, uint64, bool, ptr
	k    kind
	poly poly  // integer polynomial, when known
	ptr  *ptrv // pointers: base parameter (or shared array) and element offset
	// row-reduction mode: the value's space and, for per-thread partial
	// accumulators, the reduction operator.
	sp  space
	red string
	// acc is a per-thread partial accumulator left by a row loop.
	acc *accum
	// lane0 marks a reduction result only thread 0 holds.
	lane0 bool
	// vec holds the components of a float2/float4 value.
	vec []val
	// lower and upper are a uniform bound of an integer clamped by
	// max(L, …) or min(U, …): a loop from it iterates L's or U's range.
	lower, upper *val
	// conj is a conjunction's two operands (and), so orMask can see that
	// (X && c) || (X && !c) is X.
	conj *[2]val
	// facts are the integer bounds a condition implies (see slots.go).
	facts *facts
}

// accum is "every thread folded op over its share of a row expression,
// starting from init": the block reduction of it is op over the whole row.
type accum struct {
	op   string // sum, fmax, fmin
	row  val    // the row-space expression, masked to the loop
	init val
}

type ptrv struct {
	base   string // parameter or shared array name
	shared bool
	off    val // in elements of the pointer's type
	width  int // 2 or 4 for float2*/float4*, else 0
	// lanes: a scalar pointer reinterpreted as float2*/float4*
	// (reinterpret_cast<const float4*>(bbox + base)): off counts scalars,
	// and element i is the scalars off + width·i ... off + width·i + width-1.
	lanes bool
}

// elemAt is the index loadAt and storeAt take for p[i].
func (t *tr) elemAt(p ptrv, i val) (val, error) {
	if !p.lanes {
		return addIdx(p.off, i), nil
	}
	w := val{py: strconv.Itoa(p.width), ct: "int", k: kUniform, poly: pconst(int64(p.width))}
	s, err := t.binop("*", i, w)
	if err != nil {
		return val{}, err
	}
	return addIdx(p.off, s), nil
}

var vecFields = map[string]int{"x": 0, "y": 1, "z": 2, "w": 3}

// loadAt reads p[idx], splitting float2/float4 accesses into components.
func (t *tr) loadAt(p ptrv, idx val) (val, error) {
	if p.width == 0 {
		return t.mode.load(t, p, idx)
	}
	sp := p
	sp.width = 0
	out := val{ct: fmt.Sprintf("vec%d", p.width), k: kData}
	for c := 0; c < p.width; c++ {
		ci, err := t.componentIndex(p, idx, c)
		if err != nil {
			return val{}, err
		}
		v, err := t.mode.load(t, sp, ci)
		if err != nil {
			return val{}, err
		}
		out.vec = append(out.vec, v)
	}
	return out, nil
}

// vecPtrWidth is 4 for a float4 pointer type, 2 for float2, else 0.
func vecPtrWidth(ty string) int {
	if !strings.HasSuffix(strings.TrimSpace(ty), "*") {
		return 0
	}
	switch {
	case regexp.MustCompile(`\bfloat4\b`).MatchString(ty):
		return 4
	case regexp.MustCompile(`\bfloat2\b`).MatchString(ty):
		return 2
	}
	return 0
}

// lanesPtr reinterprets a float pointer as a float2*/float4* one. The
// pointer keeps its scalar offset (alignment is the original's business:
// a misaligned vector load faults on the GPU, the scalars read here are
// the ones an aligned one reads).
func (t *tr) lanesPtr(p ptrv, w int, ty string) (val, error) {
	if p.width != 0 || p.lanes || p.shared {
		return val{}, refuse(CodeUnsupported, "reinterpret_cast<%s> of a vector or shared pointer", ty)
	}
	if prm := t.params[p.base]; prm == nil || prm.DType != "float32" {
		return val{}, refuse(CodeUnsupported, "reinterpret_cast<%s> of a pointer whose elements are not float32", ty)
	}
	p.width, p.lanes = w, true
	return val{ct: "ptr", k: kUniform, ptr: &p}, nil
}

// sizeofType is sizeof(T) for the scalar types whose size CUDA fixes
// (sizeof(unsigned long long int) * 8 is mmcv nms's threadsPerBlock).
func sizeofType(t *tr, n *ts.Node) (int, bool) {
	tn := n.ChildByFieldName("type")
	if tn == nil {
		return 0, false
	}
	ty := strings.Join(strings.Fields(strings.ReplaceAll(t.u.text(tn), "const", "")), " ")
	if m, ok := t.u.typeMap[ty]; ok {
		ty = m
	}
	sizes := map[string]int{"char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "short": 2, "unsigned short": 2,
		"int": 4, "unsigned": 4, "unsigned int": 4, "float": 4, "double": 8, "long long": 8, "long long int": 8,
		"unsigned long long": 8, "unsigned long long int": 8, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2,
		"int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8, "half": 2, "__half": 2, "float2": 8, "float4": 16}
	b, ok := sizes[ty]
	return b, ok
}

// componentIndex is the scalar index of component c of the vector element
// at idx (idx counts scalars already for a lanes pointer).
func (t *tr) componentIndex(p ptrv, idx val, c int) (val, error) {
	if p.lanes {
		lc := val{py: strconv.Itoa(c), ct: "int", k: kUniform, poly: pconst(int64(c))}
		return t.binop("+", idx, lc)
	}
	return t.vecIndex(idx, p.width, c)
}

func (t *tr) vecIndex(idx val, w, c int) (val, error) {
	lw := val{py: strconv.Itoa(w), ct: "int", k: kUniform, poly: pconst(int64(w))}
	lc := val{py: strconv.Itoa(c), ct: "int", k: kUniform, poly: pconst(int64(c))}
	s, err := t.binop("*", idx, lw)
	if err != nil {
		return val{}, err
	}
	return t.binop("+", s, lc)
}

// storeAt writes p[idx] = v, component by component for vector pointers.
func (t *tr) storeAt(p ptrv, idx val, v val) error {
	if p.width == 0 {
		if v.vec != nil {
			return refuse(CodeUnsupported, "a vector value stored through a scalar pointer")
		}
		return t.mode.store(t, p, idx, v)
	}
	if len(v.vec) != p.width {
		return refuse(CodeUnsupported, "store of a non-vector value through a float%d pointer", p.width)
	}
	sp := p
	sp.width = 0
	for c := 0; c < p.width; c++ {
		ci, err := t.componentIndex(p, idx, c)
		if err != nil {
			return err
		}
		if err := t.mode.store(t, sp, ci, v.vec[c]); err != nil {
			return err
		}
	}
	return nil
}

// var names of special values.
const (
	pyTrue = "True"
)

func isFloat(ct string) bool { return ct == "float" || ct == "double" || ct == "half" }
func isInt(ct string) bool {
	return ct == "int" || ct == "uint" || ct == "int64" || ct == "uint64" || ct == "bool"
}

// normType maps a C type spelling to the translator's types.
func (t *tr) normType(s string) (string, error) {
	s = strings.TrimSpace(s)
	ptr := strings.HasSuffix(strings.TrimSpace(strings.ReplaceAll(s, "__restrict__", "")), "*")
	for _, w := range []string{"const", "volatile", "__restrict__", "__restrict", "restrict", "static", "register", "*", "&", "struct"} {
		s = strings.ReplaceAll(" "+s+" ", " "+w+" ", " ")
		s = strings.ReplaceAll(s, w, " ")
	}
	s = strings.Join(strings.Fields(s), " ")
	if m, ok := t.u.typeMap[s]; ok {
		s = m
	}
	if ptr {
		return "ptr", nil
	}
	switch s {
	case "float", "float32_t":
		return "float", nil
	case "double":
		return "double", nil
	case "__half", "half", "at::Half", "c10::Half":
		if t.halfMath {
			return "half", nil // f32 compute, every result rounded to float16
		}
		return "float", nil // low-precision storage is computed in f32
	case "__nv_bfloat16", "nv_bfloat16", "at::BFloat16", "c10::BFloat16":
		return "float", nil // low-precision storage is computed in f32
	case "int", "int32_t", "signed", "signed int", "short", "int16_t", "char", "signed char", "int8_t":
		return "int", nil
	case "unsigned", "unsigned int", "uint32_t", "unsigned short", "uint16_t", "unsigned char", "uint8_t":
		return "uint", nil
	case "long", "long int", "long long", "long long int", "int64_t", "ptrdiff_t", "index_t", "int64":
		return "int64", nil
	case "unsigned long", "unsigned long long", "size_t", "uint64_t":
		return "uint64", nil
	case "bool":
		return "bool", nil
	case "auto":
		return "auto", nil
	case "float4":
		return "vec4", nil
	case "float2":
		return "vec2", nil
	}
	return "", refuse(CodeUnsupported, "type %q", s)
}

func jnpType(ct string) string {
	switch ct {
	case "float", "double", "half":
		return "jnp.float32"
	case "int", "int64":
		return "jnp.int32"
	case "uint", "uint64":
		return "jnp.uint32"
	case "bool":
		return "jnp.bool_"
	}
	return "jnp.float32"
}

func rank(ct string) int {
	switch ct {
	case "bool":
		return 0
	case "int":
		return 1
	case "uint":
		return 2
	case "int64":
		return 3
	case "uint64":
		return 4
	case "half":
		return 9
	case "float":
		return 10
	case "double":
		return 11
	}
	return -1
}

// arith is C's usual arithmetic conversion.
func arith(a, b string) string {
	r := a
	if rank(b) > rank(a) {
		r = b
	}
	if r == "bool" {
		return "int"
	}
	return r
}

func maxKind(vs ...val) kind {
	k := kUniform
	for _, v := range vs {
		if v.k > k {
			k = v.k
		}
	}
	return k
}

// conv renders v converted to ct.
func conv(v val, ct string) string {
	if v.ct == ct || (isInt(v.ct) && isInt(ct) && jnpType(v.ct) == jnpType(ct) && v.ct != "bool" && ct != "bool") {
		return v.py
	}
	if v.ct == "double" && ct == "float" || v.ct == "float" && ct == "double" || v.ct == "half" && isFloat(ct) {
		return v.py
	}
	if ct == "half" {
		return "_f16(" + conv(v, "float") + ")"
	}
	return "_cast(" + v.py + ", " + jnpType(ct) + ")"
}

// ---- environment ----

type scope map[string]val

type env struct{ scopes []scope }

func (e *env) push()                   { e.scopes = append(e.scopes, scope{}) }
func (e *env) pop()                    { e.scopes = e.scopes[:len(e.scopes)-1] }
func (e *env) declare(n string, v val) { e.scopes[len(e.scopes)-1][n] = v }
func (e *env) lookup(n string) (val, bool) {
	for i := len(e.scopes) - 1; i >= 0; i-- {
		if v, ok := e.scopes[i][n]; ok {
			return v, true
		}
	}
	return val{}, false
}
func (e *env) set(n string, v val) bool {
	for i := len(e.scopes) - 1; i >= 0; i-- {
		if _, ok := e.scopes[i][n]; ok {
			e.scopes[i][n] = v
			return true
		}
	}
	return false
}
func (e *env) scopeOf(n string) int {
	for i := len(e.scopes) - 1; i >= 0; i-- {
		if _, ok := e.scopes[i][n]; ok {
			return i
		}
	}
	return -1
}
func (e *env) snapshot() []scope {
	out := make([]scope, len(e.scopes))
	for i, s := range e.scopes {
		c := scope{}
		for k, v := range s {
			c[k] = v
		}
		out[i] = c
	}
	return out
}

// ---- translator ----

// tr translates a kernel body. Mode-specific behaviour (what a thread index
// is, how loads and stores work, which loops exist) lives in the mode.
type tr struct {
	u      *unit
	spec   *kernels.Spec
	params map[string]*kernels.Param
	pins   map[string]bool // bool parameters fixed for this translation (splitDraft)
	env    env
	lines  []string
	ind    string
	tmp    int
	path   val // predicate of the current branch (py "True" when none)
	alive  val // false once the thread returned
	depth  int // helper inlining depth
	mode   mode
	notes  []string
	ret    *val // return value of the helper being inlined
	// early are the helper's returns under a condition, in order (helpers
	// mmcv's bilinear_interpolate: `if (y < -1.0 || …) return 0;`);
	// helperType is its return type, helperLoops the loops open at its call
	early       []earlyReturn
	helperType  string
	helperLoops int
	missing     []string  // size symbols the wrapper cannot derive
	nulls       []string  // pointer parameters the draft takes as NULL (Param.Null)
	loops       []*rtLoop // enclosing loops, innermost last (nil: one unrolled here)
	aliveW      *val      // inside runtime loops: alive as the wrapper can compute it (alive itself is named in the kernel)
	nloops      []*rtLoop // every runtime loop, in order (for names)
	// halfMath: c10::Half / __half values are typed "half" (an elementwise
	// draft rounds every half result to float16, as the original does);
	// elsewhere they are computed in float32.
	halfMath bool
	// halfBits: float16 arrays reach the kernel as their int16 bits
	// (_f16_bits) and the kernel decodes and encodes them (_h2f, _f2h):
	// Mosaic has no float16 refs on v5e, v6e or TPU7x, and a conversion in
	// XLA would read and write every array once more.
	halfBits bool
	// defs are the kernel's bound temporaries (bind): name -> expression,
	// so a data-dependent index can be rebuilt outside the kernel.
	defs map[string]string
	// maskDefs are the masks bindMask named: name -> expression, so that
	// a read's liveness can be rebuilt outside the kernel (maskExpr).
	maskDefs map[string]string
	// divs are the quotient and remainder atoms of polys (recombine).
	divs map[string]divAtom
}

type mode interface {
	ident(t *tr, name string) (val, bool, error)
	field(t *tr, obj, fld string) (val, error)
	load(t *tr, p ptrv, idx val) (val, error)
	store(t *tr, p ptrv, idx val, v val) error
	stmt(t *tr, n *ts.Node) (handled bool, err error)
	call(t *tr, name string, args []*ts.Node) (val, bool, error)
}

func (t *tr) note(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	for _, n := range t.notes {
		if n == s {
			return
		}
	}
	t.notes = append(t.notes, s)
}

func (t *tr) emit(format string, a ...any) {
	t.lines = append(t.lines, t.ind+fmt.Sprintf(format, a...))
}

func (t *tr) fresh(prefix string) string {
	t.tmp++
	return fmt.Sprintf("%s%d", prefix, t.tmp)
}

// bind materialises a data value into a Python variable (so expressions stay small).
func (t *tr) bind(v val, prefix string) val {
	if v.k != kData || isName(v.py) || v.vec != nil {
		return v
	}
	name := t.fresh(prefix)
	t.emit("%s = %s", name, v.py)
	if t.defs == nil {
		t.defs = map[string]string{}
	}
	t.defs[name] = v.py
	v.py = name
	return v
}

// expandDefs is py with every bound temporary replaced by its expression
// (recursively): the same value computed from the loads, the thread's index
// and the uniforms only.
func (t *tr) expandDefs(py string) string {
	for range 64 {
		changed := false
		py = rePyIdent.ReplaceAllStringFunc(py, func(id string) string {
			if d, ok := t.defs[id]; ok {
				changed = true
				return "(" + d + ")"
			}
			return id
		})
		if !changed || len(py) > maxExpanded {
			break
		}
	}
	return py
}

// maxExpanded bounds an index rebuilt by expandDefs (a temporary read twice
// at each of many levels doubles it each time).
const maxExpanded = 8000

func isName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func truth() val { return val{py: pyTrue, ct: "bool", k: kUniform} }

func isTrue(v val) bool { return v.py == pyTrue }

func and(a, b val) val {
	if isTrue(a) {
		return b
	}
	if isTrue(b) {
		return a
	}
	return val{py: "jnp.logical_and(" + a.py + ", " + b.py + ")", ct: "bool", k: maxKind(a, b), sp: maxSpace(a, b), conj: &[2]val{a, b},
		facts: bothFacts(a, b)}
}

// orMask is a || b, simplified where the two are the branches of one
// condition: c || !c is true, (X && A) || (X && B) is X && (A || B).
func orMask(a, b val) val {
	switch {
	case isTrue(a) || isTrue(b):
		return truth()
	case a.py == b.py:
		return a
	case not(a).py == b.py || not(b).py == a.py:
		return truth()
	case a.conj != nil && b.conj != nil && a.conj[0].py == b.conj[0].py:
		return and(a.conj[0], orMask(a.conj[1], b.conj[1]))
	}
	return val{py: "jnp.logical_or(" + a.py + ", " + b.py + ")", ct: "bool", k: maxKind(a, b), sp: maxSpace(a, b)}
}

func not(a val) val {
	if isTrue(a) {
		return val{py: "False", ct: "bool", k: kUniform}
	}
	return val{py: "jnp.logical_not(" + a.py + ")", ct: "bool", k: a.k, sp: a.sp, facts: a.facts.negated()}
}

func where(c, a, b val, ct string) val {
	return val{py: "jnp.where(" + c.py + ", " + conv(a, ct) + ", " + conv(b, ct) + ")", ct: ct, k: maxKind(c, a, b), sp: maxSpace(c, a, b)}
}

// ---- expressions ----

func strip(n *ts.Node) *ts.Node {
	for n != nil && (n.Type() == "parenthesized_expression" || n.Type() == "condition_clause") {
		cs := ts.Children(n)
		if len(cs) != 1 {
			break
		}
		n = cs[0]
	}
	return n
}

func (t *tr) expr(n *ts.Node) (val, error) {
	n = strip(n)
	if n == nil {
		return val{}, refuse(CodeUnsupported, "empty expression")
	}
	src := t.u.text(n)
	switch n.Type() {
	case "number_literal":
		return numLit(src)
	case "sizeof_expression":
		if b, ok := sizeofType(t, n); ok {
			return val{py: strconv.Itoa(b), ct: "uint64", k: kUniform, poly: pconst(int64(b))}, nil
		}
	case "null":
		return val{py: "None", ct: "null", k: kUniform}, nil
	case "true":
		return val{py: "True", ct: "bool", k: kUniform, poly: pconst(1)}, nil
	case "false":
		return val{py: "False", ct: "bool", k: kUniform, poly: pconst(0)}, nil
	case "char_literal":
		return val{}, refuse(CodeUnsupported, "character literal %s", src)
	case "identifier", "qualified_identifier":
		return t.ident(src)
	case "field_expression":
		obj, fld := t.u.text(n.ChildByFieldName("argument")), t.u.text(n.ChildByFieldName("field"))
		if v, ok := t.env.lookup(obj); ok && v.vec != nil {
			c, ok := vecFields[fld]
			if !ok || c >= len(v.vec) {
				return val{}, refuse(CodeUnsupported, "field %s of a vector", fld)
			}
			return v.vec[c], nil
		}
		return t.mode.field(t, obj, fld)
	case "binary_expression":
		return t.binary(n)
	case "unary_expression":
		return t.unary(n)
	case "conditional_expression":
		c, err := t.cond(n.ChildByFieldName("condition"))
		if err != nil {
			return val{}, err
		}
		if k, ok := c.poly.constant(); ok && c.k == kUniform {
			// a condition the draft fixes (a bool drafted once per value):
			// only the branch taken, as C evaluates only that one
			if k != 0 {
				return t.expr(n.ChildByFieldName("consequence"))
			}
			return t.expr(n.ChildByFieldName("alternative"))
		}
		a, err := t.expr(n.ChildByFieldName("consequence"))
		if err != nil {
			return val{}, err
		}
		b, err := t.expr(n.ChildByFieldName("alternative"))
		if err != nil {
			return val{}, err
		}
		ct := arith(a.ct, b.ct)
		if a.ct == b.ct {
			ct = a.ct
		}
		return where(c, a, b, ct), nil
	case "cast_expression":
		ct, err := t.normType(t.u.text(n.ChildByFieldName("type")))
		if err != nil {
			return val{}, err
		}
		v, err := t.expr(n.ChildByFieldName("value"))
		if err != nil {
			return val{}, err
		}
		return t.castTo(v, ct)
	case "call_expression":
		return t.callExpr(n)
	case "subscript_expression":
		return t.subscript(n)
	case "pointer_expression":
		op := t.u.text(n.Child(0))
		arg := strip(n.ChildByFieldName("argument"))
		if op == "&" && arg.Type() == "subscript_expression" {
			base, idx, err := t.address(arg)
			if err != nil {
				return val{}, err
			}
			p := *base.ptr
			if p.off, err = t.elemAt(p, idx); err != nil {
				return val{}, err
			}
			return val{ct: "ptr", k: kUniform, ptr: &p}, nil
		}
		if op == "*" {
			pv, err := t.expr(arg)
			if err != nil {
				return val{}, err
			}
			if pv.ptr == nil {
				return val{}, refuse(CodeUnsupported, "dereference of a non-pointer: %s", src)
			}
			return t.loadAt(*pv.ptr, pv.ptr.off)
		}
		return val{}, refuse(CodeUnsupported, "pointer expression %s", src)
	case "assignment_expression", "update_expression", "comma_expression":
		return val{}, refuse(CodeUnsupported, "side effect inside an expression: %s", src)
	}
	return val{}, refuse(CodeUnsupported, "expression %q (%s)", oneLine(src), n.Type())
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

func numLit(s string) (val, error) {
	ls := strings.ToLower(s)
	isHex := strings.HasPrefix(ls, "0x")
	if !isHex && (strings.ContainsAny(ls, ".e") || strings.HasSuffix(ls, "f")) {
		ct := "double"
		txt := ls
		if strings.HasSuffix(txt, "f") {
			ct = "float"
			txt = strings.TrimSuffix(txt, "f")
		}
		txt = strings.TrimSuffix(txt, "l")
		f, err := strconv.ParseFloat(txt, 64)
		if err != nil {
			return val{}, refuse(CodeUnsupported, "number %s", s)
		}
		if ct == "float" {
			f = float64(float32(f))
		}
		return val{py: "jnp.float32(" + pyFloat(f) + ")", ct: ct, k: kUniform}, nil
	}
	txt := strings.TrimRight(ls, "ul")
	suf := ls[len(txt):]
	v, err := strconv.ParseInt(txt, 0, 64)
	if err != nil {
		u, err2 := strconv.ParseUint(txt, 0, 64)
		if err2 != nil {
			return val{}, refuse(CodeUnsupported, "number %s", s)
		}
		v = int64(u)
	}
	ct := "int"
	switch {
	case strings.Contains(suf, "u") && strings.Contains(suf, "l"):
		ct = "uint64"
	case strings.Contains(suf, "l"):
		ct = "int64"
	case strings.Contains(suf, "u") || v > math.MaxInt32 && v <= math.MaxUint32:
		ct = "uint"
	}
	return val{py: strconv.FormatInt(v, 10), ct: ct, k: kUniform, poly: pconst(v)}, nil
}

func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "jnp.inf"
	case math.IsInf(f, -1):
		return "-jnp.inf"
	case math.IsNaN(f):
		return "jnp.nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".en") {
		s += ".0"
	}
	return s
}

func (t *tr) ident(name string) (val, error) {
	if v, ok := t.env.lookup(name); ok {
		return v, nil
	}
	if v, ok, err := t.mode.ident(t, name); ok || err != nil {
		return v, err
	}
	switch name {
	case "INFINITY", "HUGE_VALF", "CUDART_INF_F":
		return val{py: "jnp.float32(jnp.inf)", ct: "float", k: kUniform}, nil
	case "NAN", "CUDART_NAN_F":
		return val{py: "jnp.float32(jnp.nan)", ct: "float", k: kUniform}, nil
	case "FLT_MAX":
		return val{py: "jnp.float32(3.4028234663852886e+38)", ct: "float", k: kUniform}, nil
	case "FLT_MIN":
		return val{py: "jnp.float32(1.1754943508222875e-38)", ct: "float", k: kUniform}, nil
	case "FLT_EPSILON":
		return val{py: "jnp.float32(1.1920928955078125e-07)", ct: "float", k: kUniform}, nil
	}
	if lit, ok := mathConsts[name]; ok {
		return numLit(lit)
	}
	if d, ok := t.u.consts[name]; ok {
		ct, err := t.normType(t.u.ctypes[name])
		if err != nil {
			return val{}, err
		}
		v := d.ChildByFieldName("value")
		if v == nil || v.Type() == "initializer_list" {
			return val{}, refuse(CodeUnsupported, "global array or uninitialised constant %s", name)
		}
		cv, err := t.expr(v)
		if err != nil {
			return val{}, err
		}
		if cv.k != kUniform {
			return val{}, refuse(CodeUnsupported, "global %s is not a constant", name)
		}
		if ct == "auto" {
			return cv, nil
		}
		return t.castTo(cv, ct)
	}
	return val{}, refuse(CodeUnsupported, "unknown name %s", name)
}

// castToElem casts a value stored into prm to prm's element type as elemCT
// gives it (float16 elements are "float" here, unlike elemType), and returns
// that type: the one step of every store outside the elementwise own store.
func (t *tr) castToElem(v val, prm *kernels.Param) (val, string, error) {
	ct, err := elemCT(prm)
	if err != nil {
		return val{}, "", err
	}
	cv, err := t.castTo(v, ct)
	return cv, ct, err
}

func (t *tr) castTo(v val, ct string) (val, error) {
	switch {
	case ct == "ptr" || v.ct == "ptr":
		if v.ptr == nil {
			return val{}, refuse(CodeUnsupported, "pointer cast of %s", v.py)
		}
		return v, nil
	case ct == "auto" || ct == v.ct:
		return v, nil
	case v.vec != nil || strings.HasPrefix(ct, "vec"):
		return val{}, refuse(CodeUnsupported, "conversion between %s and %s", v.ct, ct)
	case ct == "double":
		t.note("double-precision arithmetic is computed in float32 on TPU")
	}
	out := val{py: conv(v, ct), ct: ct, k: v.k, sp: v.sp}
	if isInt(ct) && isInt(v.ct) {
		out.poly = v.poly
		out.lower, out.upper = v.lower, v.upper
	}
	if v.k == kUniform && isInt(ct) && v.poly != nil {
		if c, ok := v.poly.constant(); ok {
			out.py = strconv.FormatInt(c, 10)
			out.poly = pconst(c)
		}
	}
	if v.k == kUniform && isFloat(ct) && ct != "half" && !isFloat(v.ct) && isName(v.py) {
		out.py = "jnp.float32(" + v.py + ")"
	}
	return out, nil
}

// cond translates a condition to a bool value.
func (t *tr) cond(n *ts.Node) (val, error) {
	v, err := t.expr(n)
	if err != nil {
		return val{}, err
	}
	if v.ct == "bool" {
		return v, nil
	}
	z := "0"
	if isFloat(v.ct) {
		z = "0.0"
	}
	return val{py: "(" + v.py + " != " + z + ")", ct: "bool", k: v.k, sp: v.sp}, nil
}

func (t *tr) binary(n *ts.Node) (val, error) {
	op := t.u.text(n.ChildByFieldName("operator"))
	if v, ok, err := t.globalIndex(n); ok || err != nil {
		return v, err
	}
	if op == "&&" || op == "||" {
		a, err := t.cond(n.ChildByFieldName("left"))
		if err != nil {
			return val{}, err
		}
		b, err := t.cond(n.ChildByFieldName("right"))
		if err != nil {
			return val{}, err
		}
		fn, fs := "jnp.logical_and", bothFacts(a, b)
		if op == "||" {
			fn, fs = "jnp.logical_or", eitherFacts(a, b)
		}
		return val{py: fn + "(" + a.py + ", " + b.py + ")", ct: "bool", k: maxKind(a, b), sp: maxSpace(a, b), facts: fs}, nil
	}
	a, err := t.expr(n.ChildByFieldName("left"))
	if err != nil {
		return val{}, err
	}
	b, err := t.expr(n.ChildByFieldName("right"))
	if err != nil {
		return val{}, err
	}
	if v, ok := t.nullTest(op, a, b); ok {
		return v, nil
	}
	return t.binop(op, a, b)
}

// nullTest decides `p == NULL` / `p != NULL` (either order, nullptr or 0)
// for a pointer parameter: the spec says whether the captured launches
// passed NULL (Param.Null; run() then refuses a non-empty array), and a
// tensor's data is never NULL otherwise.
func (t *tr) nullTest(op string, a, b val) (val, bool) {
	if op != "==" && op != "!=" {
		return val{}, false
	}
	if a.ct == "null" || a.ct != "ptr" && a.poly != nil && a.poly.equal(pconst(0)) {
		a, b = b, a
	}
	isNullLit := b.ct == "null" || b.ct != "ptr" && b.poly != nil && b.poly.equal(pconst(0))
	if a.ct != "ptr" || a.ptr == nil || a.ptr.shared || !isNullLit {
		return val{}, false
	}
	prm := t.params[a.ptr.base]
	if prm == nil || prm.Kind != "pointer" {
		return val{}, false
	}
	if _, ok := a.ptr.off.poly.constant(); !ok {
		return val{}, false
	}
	null := prm.Null
	if prm.Null {
		if !slices.Contains(t.nulls, prm.Name) {
			t.nulls = append(t.nulls, prm.Name)
		}
	}
	if (op == "==") == null {
		return val{py: "True", ct: "bool", k: kUniform, poly: pconst(1)}, true
	}
	return val{py: "False", ct: "bool", k: kUniform, poly: pconst(0)}, true
}

func (t *tr) binop(op string, a, b val) (val, error) {
	if a.ptr != nil || b.ptr != nil {
		if (op == "+" || op == "-") && a.ptr != nil && b.ptr == nil && isInt(b.ct) {
			p := *a.ptr
			if op == "-" {
				nb, _ := t.binop("-", val{py: "0", ct: b.ct, k: kUniform, poly: pconst(0)}, b)
				b = nb
			}
			off, err := t.elemAt(p, b)
			if err != nil {
				return val{}, err
			}
			p.off = off
			return val{ct: "ptr", k: kUniform, ptr: &p}, nil
		}
		if op == "+" && b.ptr != nil && a.ptr == nil {
			return t.binop("+", b, a)
		}
		return val{}, refuse(CodeUnsupported, "pointer arithmetic %s", op)
	}
	k := maxKind(a, b)
	sp := maxSpace(a, b)
	if err := mixable(a, b); err != nil {
		return val{}, err
	}
	switch op {
	case "+", "-", "*":
		ct := arith(a.ct, b.ct)
		v := val{py: "(" + conv(a, ct) + " " + op + " " + conv(b, ct) + ")", ct: ct, k: k, sp: sp}
		if ct == "half" {
			v.py = halfOp(a, op, b)
		}
		if isInt(ct) {
			switch op {
			case "+":
				v.poly = a.poly.add(b.poly, 1)
			case "-":
				v.poly = a.poly.add(b.poly, -1)
			case "*":
				v.poly = a.poly.mul(b.poly)
			}
			if c, ok := v.poly.constant(); ok && k == kUniform {
				v.py = strconv.FormatInt(c, 10)
			}
		}
		return v, nil
	case "/", "%":
		ct := arith(a.ct, b.ct)
		if isFloat(ct) {
			if op == "%" {
				return val{}, refuse(CodeUnsupported, "%% on floating point")
			}
			if ct == "half" {
				return val{py: halfOp(a, "/", b), ct: ct, k: k, sp: sp}, nil
			}
			return val{py: "(" + conv(a, ct) + " / " + conv(b, ct) + ")", ct: ct, k: k, sp: sp}, nil
		}
		if ca, ok := a.poly.constant(); ok {
			if cb, ok := b.poly.constant(); ok && cb != 0 && k == kUniform {
				r := ca / cb
				if op == "%" {
					r = ca % cb
				}
				return val{py: strconv.FormatInt(r, 10), ct: ct, k: kUniform, poly: pconst(r)}, nil
			}
		}
		fn := "_c_div"
		if op == "%" {
			fn = "_c_rem"
		}
		py := fn + "(" + a.py + ", " + b.py + ", " + jnpType(ct) + ")"
		v := val{py: py, ct: ct, k: k, sp: sp, poly: popaque(py, k)}
		t.noteDivRem(v, a, b, op == "%")
		return v, nil
	case "<", "<=", ">", ">=", "==", "!=":
		ct := arith(a.ct, b.ct)
		if a.ct == "bool" && b.ct == "bool" {
			ct = "bool"
		}
		return val{py: "(" + conv(a, ct) + " " + op + " " + conv(b, ct) + ")", ct: "bool", k: k, sp: sp, facts: t.cmpFacts(op, a, b)}, nil
	case "&", "|", "^":
		ct := arith(a.ct, b.ct)
		if a.ct == "bool" && b.ct == "bool" {
			ct = "bool"
		}
		if isFloat(ct) {
			return val{}, refuse(CodeUnsupported, "bitwise %s on floating point", op)
		}
		return val{py: "(" + conv(a, ct) + " " + op + " " + conv(b, ct) + ")", ct: ct, k: k, sp: sp}, nil
	case "<<", ">>":
		if !isInt(a.ct) || !isInt(b.ct) {
			return val{}, refuse(CodeUnsupported, "shift of a non-integer")
		}
		ct := arith(a.ct, "bool")
		fn := "jnp.left_shift"
		if op == ">>" {
			fn = "jnp.right_shift"
		}
		if ca, ok := a.poly.constant(); ok && k == kUniform {
			if cb, ok := b.poly.constant(); ok && cb >= 0 && cb < 63 {
				r := ca << cb
				if op == ">>" {
					r = ca >> cb
				}
				return val{py: strconv.FormatInt(r, 10), ct: ct, k: kUniform, poly: pconst(r)}, nil
			}
		}
		v := val{py: fn + "(" + conv(a, ct) + ", " + conv(b, ct) + ")", ct: ct, k: k, sp: sp}
		if cb, ok := b.poly.constant(); ok && op == "<<" && cb >= 0 && cb < 31 {
			v.poly = a.poly.mul(pconst(1 << cb)) // an index scaled by a power of two (box[i << 2])
		}
		return v, nil
	}
	return val{}, refuse(CodeUnsupported, "operator %s", op)
}

// halfOps are the __half arithmetic and comparison intrinsics by their
// operator: IEEE half operations, correctly rounded, which float32 compute
// rounded to float16 reproduces exactly (float32 has 24 bits, more than
// twice half's 11 plus two, so the double rounding is innocuous).
var halfOps = map[string]string{"__hadd": "+", "__hsub": "-", "__hmul": "*", "__hdiv": "/",
	"__hge": ">=", "__hgt": ">", "__hle": "<=", "__hlt": "<", "__heq": "==", "__hne": "!="}

// halfIntrinsic is __hadd(a, b) and its kin: both operands converted to
// half, the operator applied as on c10::Half values. Only where half results
// are rounded to float16 (halfMath); elsewhere refused.
func (t *tr) halfIntrinsic(name string, evalArgs func() ([]val, error)) (val, error) {
	if !t.halfMath {
		return val{}, refuse(CodeUnsupported, "%s outside an elementwise draft (half results computed in float32)", name)
	}
	vs, err := evalArgs()
	if err != nil || len(vs) != 2 {
		return val{}, orRefuse(err, "%s with %d arguments", name, len(vs))
	}
	for i := range vs {
		if vs[i].ct != "half" {
			if vs[i], err = t.castTo(vs[i], "half"); err != nil {
				return val{}, err
			}
		}
	}
	return t.binop(halfOps[name], vs[0], vs[1])
}

// halfOp is a float16 operation as c10::Half and __half compute it: in
// float32, the result rounded to float16 (an operand that is not a half is
// first converted to one, as the C++ conversions do).
func halfOp(a val, op string, b val) string {
	return "_f16(" + conv(a, "half") + " " + op + " " + conv(b, "half") + ")"
}

func addIdx(a, b val) val {
	if a.py == "" {
		return b
	}
	ct := arith(a.ct, b.ct)
	return val{py: "(" + a.py + " + " + b.py + ")", ct: ct, k: maxKind(a, b), poly: a.poly.add(b.poly, 1), sp: maxSpace(a, b)}
}

func (t *tr) unary(n *ts.Node) (val, error) {
	op := t.u.text(n.ChildByFieldName("operator"))
	a, err := t.expr(n.ChildByFieldName("argument"))
	if err != nil {
		return val{}, err
	}
	switch op {
	case "-":
		ct := arith(a.ct, "bool")
		if isFloat(a.ct) {
			ct = a.ct
		}
		v := val{py: "(-" + conv(a, ct) + ")", ct: ct, k: a.k, sp: a.sp}
		if isInt(ct) {
			v.poly = pconst(0).add(a.poly, -1)
		}
		return v, nil
	case "+":
		return a, nil
	case "!":
		c, err := t.cond(n.ChildByFieldName("argument"))
		if err != nil {
			return val{}, err
		}
		return not(c), nil
	case "~":
		if !isInt(a.ct) {
			return val{}, refuse(CodeUnsupported, "~ on a non-integer")
		}
		return val{py: "jnp.invert(" + conv(a, arith(a.ct, "bool")) + ")", ct: arith(a.ct, "bool"), k: a.k, sp: a.sp}, nil
	}
	return val{}, refuse(CodeUnsupported, "unary %s", op)
}

// globalIndex recognises blockIdx.d * blockDim.d + threadIdx.d (any order, casts ignored).
func (t *tr) globalIndex(n *ts.Node) (val, bool, error) {
	gm, ok := t.mode.(interface {
		globalIdx(t *tr, dim string) (val, bool)
	})
	if !ok || t.u.text(n.ChildByFieldName("operator")) != "+" {
		return val{}, false, nil
	}
	l, r := stripCasts(n.ChildByFieldName("left"), t.u), stripCasts(n.ChildByFieldName("right"), t.u)
	for _, pair := range [][2]*ts.Node{{l, r}, {r, l}} {
		prod, th := pair[0], pair[1]
		tt := t.u.text(th)
		if !strings.HasPrefix(tt, "threadIdx.") || prod.Type() != "binary_expression" || t.u.text(prod.ChildByFieldName("operator")) != "*" {
			continue
		}
		dim := strings.TrimPrefix(tt, "threadIdx.")
		a, b := t.u.text(stripCasts(prod.ChildByFieldName("left"), t.u)), t.u.text(stripCasts(prod.ChildByFieldName("right"), t.u))
		if a == "blockIdx."+dim && b == "blockDim."+dim || b == "blockIdx."+dim && a == "blockDim."+dim {
			v, ok := gm.globalIdx(t, dim)
			return v, ok, nil
		}
	}
	return val{}, false, nil
}

func stripCasts(n *ts.Node, u *unit) *ts.Node {
	for {
		n = strip(n)
		if n == nil {
			return n
		}
		switch n.Type() {
		case "cast_expression":
			n = n.ChildByFieldName("value")
			continue
		case "call_expression":
			f := u.text(n.ChildByFieldName("function"))
			if strings.HasPrefix(f, "static_cast<") {
				args := ts.Children(n.ChildByFieldName("arguments"))
				if len(args) == 1 {
					n = args[0]
					continue
				}
			}
		}
		return n
	}
}

// address resolves p[e] to the pointer p and the index e.
func (t *tr) address(n *ts.Node) (val, val, error) {
	base, err := t.expr(n.ChildByFieldName("argument"))
	if err != nil {
		return val{}, val{}, err
	}
	if base.ptr == nil {
		return val{}, val{}, refuse(CodeUnsupported, "subscript of a non-pointer: %s", oneLine(t.u.text(n)))
	}
	idxNode := n.ChildByFieldName("indices")
	if idxNode == nil {
		idxNode = n.ChildByFieldName("index")
	}
	ics := ts.Children(idxNode)
	if idxNode != nil && idxNode.Type() == "subscript_argument_list" {
		if len(ics) != 1 {
			return val{}, val{}, refuse(CodeUnsupported, "multi-index subscript")
		}
		idxNode = ics[0]
	}
	idx, err := t.expr(idxNode)
	if err != nil {
		return val{}, val{}, err
	}
	if !isInt(idx.ct) {
		return val{}, val{}, refuse(CodeUnsupported, "non-integer index")
	}
	return base, idx, nil
}

func (t *tr) subscript(n *ts.Node) (val, error) {
	base, idx, err := t.address(n)
	if err != nil {
		return val{}, err
	}
	p := *base.ptr
	at, err := t.elemAt(p, idx)
	if err != nil {
		return val{}, err
	}
	return t.loadAt(p, at)
}

// mathConsts are <math.h>'s constants (double literals, as glibc spells
// them) and the CUDA math API's float ones, for units drafted without the
// preprocessor (after it, they are these literals already).
var mathConsts = map[string]string{
	"M_E": "2.7182818284590452354", "M_LOG2E": "1.4426950408889634074", "M_LOG10E": "0.43429448190325182765",
	"M_LN2": "0.69314718055994530942", "M_LN10": "2.30258509299404568402", "M_PI": "3.14159265358979323846",
	"M_PI_2": "1.57079632679489661923", "M_PI_4": "0.78539816339744830962", "M_1_PI": "0.31830988618379067154",
	"M_2_PI": "0.63661977236758134308", "M_2_SQRTPI": "1.12837916709551257390", "M_SQRT2": "1.41421356237309504880",
	"M_SQRT1_2":   "0.70710678118654752440",
	"CUDART_PI_F": "3.141592654f", "CUDART_PI": "3.1415926535897931e+0", "CUDART_2_OVER_PI_F": "0.636619772f",
	"CUDART_PIO2_F": "1.570796327f", "CUDART_SQRT_HALF_F": "0.707106781f", "CUDART_SQRT_2PI_F": "2.506628275f",
	"CUDART_L2E_F": "1.442695041f", "CUDART_LN2_F": "0.693147181f", "CUDART_ZERO_F": "0.0f", "CUDART_ONE_F": "1.0f",
	"CUDART_MIN_DENORM_F": "1.40129846e-45f",
}

// math library, float32 semantics.
var mathFns = map[string]string{
	"expf": "jnp.exp", "__expf": "jnp.exp", "exp": "jnp.exp", "exp2f": "jnp.exp2", "expm1f": "jnp.expm1",
	"logf": "jnp.log", "__logf": "jnp.log", "log": "jnp.log", "log2f": "jnp.log2", "log10f": "jnp.log10", "log1pf": "jnp.log1p",
	"sqrtf": "jnp.sqrt", "sqrt": "jnp.sqrt", "__fsqrt_rn": "jnp.sqrt", "rsqrtf": "lax.rsqrt", "rsqrt": "lax.rsqrt",
	"tanhf": "jnp.tanh", "tanh": "jnp.tanh", "sinf": "jnp.sin", "__sinf": "jnp.sin", "cosf": "jnp.cos", "__cosf": "jnp.cos",
	"tanf": "jnp.tan", "erff": "lax.erf", "erf": "lax.erf", "erfcf": "lax.erfc", "fabsf": "jnp.abs", "fabs": "jnp.abs",
	"floorf": "jnp.floor", "ceilf": "jnp.ceil", "truncf": "jnp.trunc", "sinhf": "jnp.sinh", "coshf": "jnp.cosh",
	"atanf": "jnp.arctan", "asinf": "jnp.arcsin", "acosf": "jnp.arccos", "isnan": "jnp.isnan", "isinf": "jnp.isinf", "isfinite": "jnp.isfinite",
	// the C++ overloads a template kernel calls with T = float (CUDA's float
	// overloads of <cmath>); drafts compute in float32 either way
	"floor": "jnp.floor", "ceil": "jnp.ceil", "trunc": "jnp.trunc", "sin": "jnp.sin", "cos": "jnp.cos", "tan": "jnp.tan",
	"log2": "jnp.log2", "log10": "jnp.log10", "log1p": "jnp.log1p", "expm1": "jnp.expm1", "exp2": "jnp.exp2",
	"sinh": "jnp.sinh", "cosh": "jnp.cosh", "atan": "jnp.arctan", "asin": "jnp.arcsin", "acos": "jnp.arccos",
}

var math2Fns = map[string]string{
	"fmaxf": "jnp.fmax", "fmax": "jnp.fmax", "fminf": "jnp.fmin", "fmin": "jnp.fmin", "powf": "jnp.power", "__powf": "jnp.power",
	"fmodf": "jnp.fmod", "copysignf": "jnp.copysign", "atan2f": "jnp.arctan2", "__fdividef": "/", "hypotf": "jnp.hypot",
	"pow": "jnp.power", "fmod": "jnp.fmod", "atan2": "jnp.arctan2", "hypot": "jnp.hypot", "copysign": "jnp.copysign",
}

func (t *tr) callExpr(n *ts.Node) (val, error) {
	fname := t.u.text(n.ChildByFieldName("function"))
	args := ts.Children(n.ChildByFieldName("arguments"))
	name := fname
	if i := strings.LastIndex(name, "::"); i >= 0 && !strings.Contains(name, "<") {
		name = name[i+2:]
	}
	if strings.HasPrefix(fname, "static_cast<") || strings.HasPrefix(fname, "reinterpret_cast<") {
		ty := strings.TrimSuffix(fname[strings.Index(fname, "<")+1:], ">")
		ct, err := t.normType(ty)
		if err != nil {
			return val{}, err
		}
		if len(args) != 1 {
			return val{}, refuse(CodeUnsupported, "cast with %d arguments", len(args))
		}
		v, err := t.expr(args[0])
		if err != nil {
			return val{}, err
		}
		if w := vecPtrWidth(ty); ct == "ptr" && v.ptr != nil && w != 0 {
			return t.lanesPtr(*v.ptr, w, ty)
		}
		return t.castTo(v, ct)
	}
	if v, ok, err := t.mode.call(t, name, args); ok || err != nil {
		return v, err
	}
	evalArgs := func() ([]val, error) {
		var out []val
		for _, a := range args {
			v, err := t.expr(a)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	if fn, ok := mathFns[name]; ok && len(args) == 1 {
		vs, err := evalArgs()
		if err != nil {
			return val{}, err
		}
		a := vs[0]
		if isInt(a.ct) && (name == "abs") {
			return val{py: "jnp.abs(" + a.py + ")", ct: a.ct, k: a.k, sp: a.sp}, nil
		}
		if strings.HasPrefix(name, "__") {
			t.note("%s (fast-math intrinsic) is translated as its accurate float32 counterpart", name)
		}
		rt := "float"
		if strings.HasPrefix(fn, "jnp.is") {
			rt = "bool"
		}
		return val{py: fn + "(" + conv(a, "float") + ")", ct: rt, k: a.k, sp: a.sp}, nil
	}
	if fn, ok := math2Fns[name]; ok && len(args) == 2 {
		vs, err := evalArgs()
		if err != nil {
			return val{}, err
		}
		if fn == "/" {
			return val{py: "(" + conv(vs[0], "float") + " / " + conv(vs[1], "float") + ")", ct: "float", k: maxKind(vs...), sp: maxSpace(vs...)}, nil
		}
		return val{py: fn + "(" + conv(vs[0], "float") + ", " + conv(vs[1], "float") + ")", ct: "float", k: maxKind(vs...), sp: maxSpace(vs...)}, nil
	}
	switch name {
	case "max", "min", "std::max", "std::min":
		vs, err := evalArgs()
		if err != nil || len(vs) != 2 {
			return val{}, orRefuse(err, "%s with %d arguments", name, len(args))
		}
		ct := arith(vs[0].ct, vs[1].ct)
		fn := map[string]string{"max": "jnp.maximum", "min": "jnp.minimum"}[strings.TrimPrefix(name, "std::")]
		if isFloat(ct) {
			fn = map[string]string{"jnp.maximum": "jnp.fmax", "jnp.minimum": "jnp.fmin"}[fn]
		}
		k := maxKind(vs...)
		if k == kUniform {
			fn = strings.TrimPrefix(strings.TrimPrefix(fn, "jnp."), "f")
			fn = map[string]string{"maximum": "max", "minimum": "min", "max": "max", "min": "min"}[fn]
		}
		out := val{py: fn + "(" + conv(vs[0], ct) + ", " + conv(vs[1], ct) + ")", ct: ct, k: k, sp: maxSpace(vs...)}
		clampBound(&out, strings.TrimPrefix(name, "std::"), vs)
		return out, nil
	case "abs":
		vs, err := evalArgs()
		if err != nil || len(vs) != 1 {
			return val{}, orRefuse(err, "abs with %d arguments", len(args))
		}
		return val{py: "jnp.abs(" + vs[0].py + ")", ct: vs[0].ct, k: vs[0].k, sp: vs[0].sp}, nil
	case "fmaf", "fma", "__fmaf_rn":
		vs, err := evalArgs()
		if err != nil || len(vs) != 3 {
			return val{}, orRefuse(err, "fmaf with %d arguments", len(args))
		}
		t.note("fmaf is computed as a multiply then an add (not fused)")
		return val{py: "(" + conv(vs[0], "float") + " * " + conv(vs[1], "float") + " + " + conv(vs[2], "float") + ")", ct: "float", k: maxKind(vs...), sp: maxSpace(vs...)}, nil
	case "__frcp_rn":
		vs, err := evalArgs()
		if err != nil || len(vs) != 1 {
			return val{}, orRefuse(err, "__frcp_rn")
		}
		return val{py: "(1.0 / " + conv(vs[0], "float") + ")", ct: "float", k: vs[0].k, sp: vs[0].sp}, nil
	case "make_float4", "make_float2":
		vs, err := evalArgs()
		if err != nil {
			return val{}, err
		}
		out := val{ct: fmt.Sprintf("vec%d", len(vs)), k: maxKind(vs...)}
		for _, v := range vs {
			cv, err := t.castTo(v, "float")
			if err != nil {
				return val{}, err
			}
			out.vec = append(out.vec, t.bind(cv, "v"))
		}
		return out, nil
	case "__ldg":
		if len(args) != 1 {
			return val{}, refuse(CodeUnsupported, "__ldg with %d arguments", len(args))
		}
		pv, err := t.expr(args[0])
		if err != nil {
			return val{}, err
		}
		if pv.ptr == nil {
			return val{}, refuse(CodeUnsupported, "__ldg of a non-pointer")
		}
		return t.loadAt(*pv.ptr, pv.ptr.off)
	case "__hadd", "__hsub", "__hmul", "__hdiv", "__hge", "__hgt", "__hle", "__hlt", "__heq", "__hne":
		return t.halfIntrinsic(name, evalArgs)
	case "__int2half_rn":
		if !t.halfMath {
			return val{}, refuse(CodeUnsupported, "%s outside an elementwise draft (half results computed in float32)", name)
		}
		vs, err := evalArgs()
		if err != nil || len(vs) != 1 || !isInt(vs[0].ct) {
			return val{}, orRefuse(err, "%s of a non-integer", name)
		}
		return t.castTo(vs[0], "half")
	case "__half2float", "__bfloat162float", "__float2half", "__float2bfloat16", "__float2half_rn", "__float2bfloat16_rn", "float":
		vs, err := evalArgs()
		if err != nil || len(vs) != 1 {
			return val{}, orRefuse(err, "%s", name)
		}
		if t.halfMath && strings.HasPrefix(name, "__float2half") {
			return t.castTo(vs[0], "half")
		}
		return t.castTo(vs[0], "float")
	}
	if _, ok := t.u.typeMap[name]; ok && len(args) == 1 {
		// a functional cast to a template type: T(offset)
		ct, err := t.normType(name)
		if err != nil {
			return val{}, err
		}
		v, err := t.expr(args[0])
		if err != nil {
			return val{}, err
		}
		return t.castTo(v, ct)
	}
	if fn, ok := t.u.funcs[name]; ok {
		if params := templateParams(t.u, fn); len(params) > 0 {
			bind, err := t.deduce(fn, params, args)
			if err != nil {
				return val{}, err
			}
			return t.inlineWith(fn, args, bind)
		}
		return t.inline(fn, args)
	}
	if fn, targs, ok := t.templateHelper(name); ok {
		return t.inlineWith(fn, args, targs)
	}
	return val{}, refuse(CodeUnsupported, "call to %s", name)
}

// templateHelper resolves a call with explicit template arguments
// (`load_bbox<T>(...)`): the arguments spelled with the kernel's template
// arguments, then the helper's explicit specialisation for them when the
// unit has one (`template <> ... load_bbox<float>(...)`), else the primary
// template with its parameters bound to them.
func (t *tr) templateHelper(name string) (*ts.Node, map[string]string, bool) {
	i := strings.Index(name, "<")
	if i <= 0 || !strings.HasSuffix(name, ">") {
		return nil, nil, false
	}
	base := strings.TrimSpace(name[:i])
	var targs []string
	for _, a := range strings.Split(name[i+1:len(name)-1], ",") {
		a = strings.Join(strings.Fields(a), " ")
		if m, ok := t.u.typeMap[a]; ok {
			a = m
		}
		targs = append(targs, a)
	}
	if fn, ok := t.u.funcs[base+"<"+strings.Join(targs, ",")+">"]; ok {
		return fn, nil, true
	}
	fn, ok := t.u.funcs[base]
	if !ok {
		return nil, nil, false
	}
	tmpl := fn.Parent()
	if tmpl == nil || tmpl.Type() != "template_declaration" {
		return nil, nil, false
	}
	var names []string
	for _, p := range ts.Children(tmpl.ChildByFieldName("parameters")) {
		if p.Type() != "type_parameter_declaration" {
			return nil, nil, false
		}
		cs := ts.Children(p)
		names = append(names, t.u.text(cs[len(cs)-1]))
	}
	if len(names) != len(targs) {
		return nil, nil, false
	}
	bind := map[string]string{}
	for j, n := range names {
		bind[n] = targs[j]
	}
	return fn, bind, true
}

// templateParams are the type parameters of a template helper (nil for a
// plain function, or a template with a non-type parameter).
func templateParams(u *unit, fn *ts.Node) []string {
	tmpl := fn.Parent()
	if tmpl == nil || tmpl.Type() != "template_declaration" {
		return nil
	}
	var names []string
	for _, p := range ts.Children(tmpl.ChildByFieldName("parameters")) {
		if p.Type() != "type_parameter_declaration" {
			return nil
		}
		cs := ts.Children(p)
		names = append(names, u.text(cs[len(cs)-1]))
	}
	return names
}

// cTypeOf is the C type a template argument deduced from a value of
// translator type ct spells (the types deduction handles).
var cTypeOf = map[string]string{"float": "float", "double": "double", "int": "int", "uint": "unsigned int",
	"int64": "int64_t", "bool": "bool", "half": "c10::Half"}

// deduce binds a template helper's type parameters as C++ deduces them
// from a call without template arguments (mmcv's bilinear_interpolate(input,
// …, y, x) for template <typename T> … (const T* input, …, T y, T x)): each
// parameter declared as T, T* or T& (const or not) takes its argument's
// type, a pointer's its element type. A parameter deduced two ways, or not
// at all, is refused. The arguments are translated to read their types
// only: what that emits is dropped (inline translates them again).
func (t *tr) deduce(fn *ts.Node, names []string, args []*ts.Node) (map[string]string, error) {
	decl := fn.ChildByFieldName("declarator")
	for decl != nil && decl.Type() != "function_declarator" {
		decl = decl.ChildByFieldName("declarator")
	}
	var ps []*ts.Node
	for _, p := range ts.Children(decl.ChildByFieldName("parameters")) {
		if p.Type() == "parameter_declaration" {
			ps = append(ps, p)
		}
	}
	fname := funcName(fn, t.u.src)
	if len(ps) != len(args) {
		return nil, refuse(CodeUnsupported, "call to %s with %d arguments (declared %d)", fname, len(args), len(ps))
	}
	saved := len(t.lines)
	defer func() { t.lines = t.lines[:saved] }()
	bind := map[string]string{}
	for i, p := range ps {
		typ := strings.Join(strings.Fields(strings.ReplaceAll(t.u.text(p.ChildByFieldName("type")), "const", "")), " ")
		if !slices.Contains(names, typ) {
			continue
		}
		v, err := t.expr(args[i])
		if err != nil {
			return nil, err
		}
		ct := v.ct
		if v.ptr != nil {
			prm := t.params[v.ptr.base]
			if prm == nil {
				return nil, refuse(CodeUnsupported, "%s: the type of %s cannot be deduced", fname, oneLine(t.u.text(args[i])))
			}
			if ct, err = t.elemType(prm); err != nil {
				return nil, err
			}
		}
		c, ok := cTypeOf[ct]
		if !ok {
			return nil, refuse(CodeUnsupported, "%s: %s deduced from a %s", fname, typ, ct)
		}
		if old, seen := bind[typ]; seen && old != c {
			return nil, refuse(CodeUnsupported, "%s: %s deduced as both %s and %s", fname, typ, old, c)
		}
		bind[typ] = c
	}
	for _, n := range names {
		if _, ok := bind[n]; !ok {
			return nil, refuse(CodeUnsupported, "%s: template parameter %s is not deduced from the call", fname, n)
		}
	}
	return bind, nil
}

// inlineWith inlines a template helper with its template parameters bound.
func (t *tr) inlineWith(fn *ts.Node, args []*ts.Node, targs map[string]string) (val, error) {
	saved := map[string]*string{}
	for n, v := range targs {
		if old, ok := t.u.typeMap[n]; ok {
			saved[n] = &old
		} else {
			saved[n] = nil
		}
		t.u.typeMap[n] = v
	}
	defer func() {
		for n, old := range saved {
			if old == nil {
				delete(t.u.typeMap, n)
			} else {
				t.u.typeMap[n] = *old
			}
		}
	}()
	return t.inline(fn, args)
}

func orRefuse(err error, format string, a ...any) error {
	if err != nil {
		return err
	}
	return refuse(CodeUnsupported, format, a...)
}

// wholeBody reports a call to a helper that is the kernel's whole body (an
// expression statement, the body's only one: mmcv's
// bbox_overlaps_cuda_kernel<at::Half> calls bbox_overlaps_cuda_kernel_half
// with its arguments): the helper's body is translated as the kernel's, at
// depth 0, so its guards and grid-stride loops bound the domain as the
// kernel's own would and a return in it ends the thread, as it does.
func (t *tr) wholeBody(args []*ts.Node) bool {
	if t.depth != 0 || len(args) == 0 || !isTrue(t.path) || !isTrue(t.alive) || len(t.loops) > 0 {
		return false
	}
	call := args[0].Parent()
	if call != nil {
		call = call.Parent()
	}
	body := t.u.kernel.ChildByFieldName("body")
	if call == nil || call.Parent() == nil || body == nil || body.NamedChildCount() != 1 {
		return false
	}
	st := call.Parent()
	return st.Type() == "expression_statement" && st.Parent() != nil &&
		st.Parent().StartByte() == body.StartByte() && st.Parent().EndByte() == body.EndByte()
}

// inline translates a __device__ helper call: parameters bound to the
// argument values, body translated in place, the return value returned.
func (t *tr) inline(fn *ts.Node, args []*ts.Node) (val, error) {
	if t.depth > 8 {
		return val{}, refuse(CodeUnsupported, "helper calls nest too deep (recursion?)")
	}
	decl := fn.ChildByFieldName("declarator")
	for decl != nil && decl.Type() != "function_declarator" {
		decl = decl.ChildByFieldName("declarator")
	}
	rtype, err := t.normType(t.u.text(fn.ChildByFieldName("type")))
	if err != nil && t.u.text(fn.ChildByFieldName("type")) != "void" {
		return val{}, err
	}
	var ps []*ts.Node
	for _, p := range ts.Children(decl.ChildByFieldName("parameters")) {
		if p.Type() == "parameter_declaration" {
			ps = append(ps, p)
		}
	}
	if len(ps) != len(args) {
		return val{}, refuse(CodeUnsupported, "call to %s with %d arguments (declared %d)", funcName(fn, t.u.src), len(args), len(ps))
	}
	refs, err := t.refArgs(fn, ps, args)
	if err != nil {
		return val{}, err
	}
	var vals []val
	for _, a := range args {
		v, err := t.expr(a)
		if err != nil {
			return val{}, err
		}
		vals = append(vals, t.bind(v, "a"))
	}
	saved := t.env
	savedRet := t.ret
	t.env = env{scopes: []scope{{}}}
	// helpers see globals only (through ident) and their parameters
	for i, p := range ps {
		d := p.ChildByFieldName("declarator")
		if d != nil && d.Type() == "reference_declarator" {
			d = d.NamedChild(0)
		}
		pt := t.u.text(p.ChildByFieldName("type"))
		if d != nil && d.Type() == "pointer_declarator" {
			pt += "*"
		}
		ct, err := t.normType(pt)
		if err != nil {
			t.env, t.ret = saved, savedRet
			return val{}, err
		}
		name := declName(d, t.u)
		v := vals[i]
		if ct != "ptr" {
			if v, err = t.castTo(v, ct); err != nil {
				t.env, t.ret = saved, savedRet
				return val{}, err
			}
		}
		t.env.declare(name, v)
	}
	t.ret = nil
	whole := rtype == "" && t.wholeBody(args)
	if !whole {
		t.depth++
	}
	savedPath, savedAlive, savedAliveW := t.path, t.alive, t.aliveW
	savedEarly, savedType, savedLoops := t.early, t.helperType, t.helperLoops
	t.early, t.helperType, t.helperLoops = nil, rtype, len(t.loops)
	err = t.block(fn.ChildByFieldName("body"))
	if !whole {
		t.depth--
	}
	early := t.early
	t.path, t.alive, t.aliveW = savedPath, savedAlive, savedAliveW // the caller's threads all go on
	t.early, t.helperType, t.helperLoops = savedEarly, savedType, savedLoops
	ret := t.ret
	if err == nil && len(early) > 0 {
		ret, err = t.earlyResult(early, ret, funcName(fn, t.u.src), rtype)
	}
	outs := map[string]val{}
	for param, local := range refs {
		outs[local], _ = t.env.lookup(param)
	}
	t.env, t.ret = saved, savedRet
	if err != nil {
		return val{}, err
	}
	for local, v := range outs {
		cur, _ := t.env.lookup(local)
		cv, err := t.castTo(v, cur.ct)
		if err != nil {
			return val{}, err
		}
		t.env.set(local, cv)
	}
	if ret == nil {
		return val{py: "None", ct: "void", k: kUniform}, nil
	}
	if rtype != "" && rtype != "auto" {
		return t.castTo(*ret, rtype)
	}
	return *ret, nil
}

// refArgs maps a helper's reference parameters (`T& x1`) to the caller's
// locals passed for them: the parameter starts as the local's value and the
// local takes the parameter's last value when the helper returns. A helper
// with a return statement, an argument that is not a plain scalar local or
// a local passed twice is refused (the copy-in, copy-out reading would not
// be exact).
func (t *tr) refArgs(fn *ts.Node, ps, args []*ts.Node) (map[string]string, error) {
	refs := map[string]string{}
	seen := map[string]bool{}
	for i, p := range ps {
		d := p.ChildByFieldName("declarator")
		if d == nil || d.Type() != "reference_declarator" {
			continue
		}
		a := strip(args[i])
		cur, ok := t.env.lookup(t.u.text(a))
		if a.Type() != "identifier" || !ok || cur.ptr != nil || cur.vec != nil || cur.acc != nil || seen[t.u.text(a)] {
			return nil, refuse(CodeUnsupported, "reference parameter in %s bound to %s", funcName(fn, t.u.src), oneLine(t.u.text(args[i])))
		}
		if hasReturn(fn.ChildByFieldName("body")) {
			return nil, refuse(CodeUnsupported, "reference parameter in %s, which returns early", funcName(fn, t.u.src))
		}
		seen[t.u.text(a)] = true
		refs[declName(d, t.u)] = t.u.text(a)
	}
	return refs, nil
}

func hasReturn(n *ts.Node) bool {
	if n == nil {
		return false
	}
	if n.Type() == "return_statement" {
		return true
	}
	for _, c := range ts.Children(n) {
		if hasReturn(c) {
			return true
		}
	}
	return false
}

func declName(d *ts.Node, u *unit) string {
	for d != nil {
		switch d.Type() {
		case "identifier", "field_identifier":
			return u.text(d)
		}
		nd := d.ChildByFieldName("declarator")
		if nd == nil {
			cs := ts.Children(d)
			if len(cs) == 0 {
				break
			}
			nd = cs[len(cs)-1]
		}
		d = nd
	}
	return ""
}

// ---- statements ----

func (t *tr) block(n *ts.Node) error {
	if n == nil {
		return nil
	}
	if n.Type() != "compound_statement" {
		return t.stmt(n)
	}
	t.env.push()
	defer t.env.pop()
	for _, c := range ts.Children(n) {
		if err := t.stmt(c); err != nil {
			return err
		}
	}
	return nil
}

func (t *tr) stmt(n *ts.Node) error {
	if handled, err := t.mode.stmt(t, n); handled || err != nil {
		return err
	}
	switch n.Type() {
	case "comment":
		return nil
	case "compound_statement":
		return t.block(n)
	case "declaration":
		return t.declaration(n)
	case "expression_statement":
		cs := ts.Children(n)
		if len(cs) == 0 {
			return nil
		}
		return t.exprStmt(cs[0])
	case "if_statement":
		return t.ifStmt(n)
	case "return_statement":
		cs := ts.Children(n)
		if t.depth > 0 {
			var v *val
			if len(cs) > 0 {
				x, err := t.expr(cs[0])
				if err != nil {
					return err
				}
				v = &x
			}
			if !isTrue(t.path) {
				return t.earlyReturn(v)
			}
			if v == nil {
				return nil
			}
			if t.ret == nil {
				t.ret = v
				return nil
			}
			return refuse(CodeUnsupported, "a helper has several returns")
		}
		if t.inRuntimeLoop() {
			return refuse(CodeLoop, "return inside a loop with a runtime trip count")
		}
		t.alive = and(t.alive, not(t.path))
		return nil
	case "for_statement":
		return t.forLoop(n)
	case "continue_statement", "break_statement":
		return t.loopJump(n)
	}
	return refuse(CodeUnsupported, "statement %q", oneLine(t.u.text(n)))
}

func (t *tr) declaration(n *ts.Node) error {
	typ := t.u.text(n.ChildByFieldName("type"))
	for _, d := range ts.Children(n) {
		if d == n.ChildByFieldName("type") {
			continue
		}
		switch d.Type() {
		case "init_declarator":
			inner := d.ChildByFieldName("declarator")
			ty := typ
			if inner.Type() == "pointer_declarator" {
				ty += "*"
			}
			if inner.Type() == "array_declarator" || inner.Type() == "reference_declarator" {
				return refuse(CodeUnsupported, "local array or reference %s", oneLine(t.u.text(d)))
			}
			ct, err := t.normType(ty)
			if err != nil {
				return err
			}
			vn := d.ChildByFieldName("value")
			if vn != nil && vn.Type() == "initializer_list" {
				return refuse(CodeUnsupported, "initializer list %s", oneLine(t.u.text(d)))
			}
			v, err := t.expr(vn)
			if err != nil {
				return err
			}
			if v, err = t.castTo(v, ct); err != nil {
				return err
			}
			t.env.declare(declName(inner, t.u), t.bind(v, "v"))
		case "identifier":
			ct, err := t.normType(typ)
			if err != nil {
				return err
			}
			z := "0"
			if isFloat(ct) {
				z = "jnp.float32(0.0)"
			}
			if strings.HasPrefix(ct, "vec") {
				n, _ := strconv.Atoi(ct[3:])
				v := val{ct: ct, k: kUniform}
				for i := 0; i < n; i++ {
					v.vec = append(v.vec, val{py: "jnp.float32(0.0)", ct: "float", k: kUniform})
				}
				t.env.declare(t.u.text(d), v)
				continue
			}
			t.env.declare(t.u.text(d), val{py: z, ct: ct, k: kUniform, poly: pconst(0)})
		case "array_declarator", "pointer_declarator":
			if t.u.shared[declName(d, t.u)] {
				continue
			}
			return refuse(CodeUnsupported, "declaration %s", oneLine(t.u.text(n)))
		default:
			if strings.HasPrefix(d.Type(), "type_qualifier") || d.Type() == "storage_class_specifier" || d.Type() == "comment" {
				continue
			}
		}
	}
	return nil
}

var compound = map[string]string{"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "&=": "&", "|=": "|", "^=": "^", "<<=": "<<", ">>=": ">>"}

func (t *tr) exprStmt(n *ts.Node) error {
	n = strip(n)
	switch n.Type() {
	case "assignment_expression":
		op := t.u.text(n.ChildByFieldName("operator"))
		lhs := strip(n.ChildByFieldName("left"))
		right := strip(n.ChildByFieldName("right"))
		if inner := right; op == "=" && inner.Type() == "assignment_expression" &&
			strip(inner.ChildByFieldName("left")).Type() == "identifier" {
			// a = b = e with b a local: b = e first, then a = b (b's value
			// as assigned, converted to b's type as C's assignment yields it)
			if err := t.exprStmt(inner); err != nil {
				return err
			}
			right = strip(inner.ChildByFieldName("left"))
		}
		rhs, err := t.expr(right)
		if err != nil {
			return err
		}
		return t.assign(lhs, op, rhs)
	case "update_expression":
		arg := strip(n.ChildByFieldName("argument"))
		op := "+="
		if strings.Contains(t.u.text(n), "--") {
			op = "-="
		}
		return t.assign(arg, op, val{py: "1", ct: "int", k: kUniform, poly: pconst(1)})
	case "call_expression":
		v, err := t.callExpr(n)
		if err != nil {
			return err
		}
		_ = v
		return nil
	}
	return refuse(CodeUnsupported, "statement %q", oneLine(t.u.text(n)))
}

func (t *tr) assign(lhs *ts.Node, op string, rhs val) error {
	switch lhs.Type() {
	case "identifier":
		name := t.u.text(lhs)
		old, ok := t.env.lookup(name)
		if !ok {
			moved, err := t.pointerParam(name)
			if err != nil {
				return err
			}
			old = moved
		}
		if old.ct == "ptr" && !isTrue(t.path) {
			// the branches would leave the pointer at two places: a pointer
			// value has one offset, not a select of two
			return refuse(CodeUnsupported, "pointer %s is moved inside a branch", name)
		}
		if old.ct == "ptr" && t.innerRuntime() != nil {
			// the loop's body is translated once: a move there is carried
			// from iteration to iteration
			return refuse(CodeUnsupported, "pointer %s is moved inside a loop with a runtime trip count", name)
		}
		nv := rhs
		if bop, ok := compound[op]; ok {
			var err error
			if nv, err = t.binop(bop, old, rhs); err != nil {
				return err
			}
		}
		nv, err := t.castTo(nv, old.ct)
		if err != nil {
			return err
		}
		if !t.env.set(name, t.bind(t.maskCarried(name, old, nv), "v")) {
			// a pointer parameter moved for the first time: from here on
			// the name is that pointer at its new offset, for the rest of
			// the kernel (function scope, as in C)
			t.env.scopes[0][name] = nv
		}
		return nil
	case "subscript_expression", "pointer_expression":
		var p ptrv
		var idx val
		if lhs.Type() == "subscript_expression" {
			base, i, err := t.address(lhs)
			if err != nil {
				return err
			}
			p = *base.ptr
			if idx, err = t.elemAt(p, i); err != nil {
				return err
			}
		} else {
			if t.u.text(lhs.Child(0)) != "*" {
				return refuse(CodeUnsupported, "assignment to %s", oneLine(t.u.text(lhs)))
			}
			pv, err := t.expr(lhs.ChildByFieldName("argument"))
			if err != nil {
				return err
			}
			if pv.ptr == nil {
				return refuse(CodeUnsupported, "store through a non-pointer")
			}
			p, idx = *pv.ptr, pv.ptr.off
		}
		v := rhs
		if bop, ok := compound[op]; ok {
			if p.width != 0 {
				return refuse(CodeUnsupported, "compound assignment through a vector pointer")
			}
			old, err := t.mode.load(t, p, idx)
			if err != nil {
				return err
			}
			if v, err = t.binop(bop, old, rhs); err != nil {
				return err
			}
		}
		return t.storeAt(p, idx, v)
	case "field_expression":
		obj, fld := t.u.text(lhs.ChildByFieldName("argument")), t.u.text(lhs.ChildByFieldName("field"))
		old, ok := t.env.lookup(obj)
		c, okf := vecFields[fld]
		if !ok || old.vec == nil || !okf || c >= len(old.vec) {
			return refuse(CodeUnsupported, "assignment to %s", oneLine(t.u.text(lhs)))
		}
		nv := rhs
		if bop, ok := compound[op]; ok {
			var err error
			if nv, err = t.binop(bop, old.vec[c], rhs); err != nil {
				return err
			}
		}
		nv, err := t.castTo(nv, "float")
		if err != nil {
			return err
		}
		vec := append([]val{}, old.vec...)
		vec[c] = t.bind(nv, "v")
		old.vec = vec
		t.env.set(obj, old)
		return nil
	}
	return refuse(CodeUnsupported, "assignment to %s", oneLine(t.u.text(lhs)))
}

// pointerMover is a mode that lets a kernel move its pointer parameters
// (`out += offset`, `p = p + offset`): it answers whether the move is exact
// where the code is now (a grid-stride loop makes it loop-carried).
type pointerMover interface {
	movePointer(t *tr, name string) error
}

// pointerParam is the pointer parameter name as a value about to be moved,
// when the mode allows it: C's `p += e` on a parameter is an offset on the
// pointer value, the same base array.
func (t *tr) pointerParam(name string) (val, error) {
	pv, ok, err := t.mode.ident(t, name)
	if err != nil {
		return val{}, err
	}
	if !ok || pv.ptr == nil || t.depth > 0 {
		return val{}, refuse(CodeUnsupported, "assignment to %s (not a local)", name)
	}
	pm, ok := t.mode.(pointerMover)
	if !ok {
		return val{}, refuse(CodeUnsupported, "pointer parameter %s is moved (only elementwise drafts move pointers)", name)
	}
	if err := pm.movePointer(t, name); err != nil {
		return val{}, err
	}
	return pv, nil
}

func (t *tr) ifStmt(n *ts.Node) error {
	c, err := t.cond(n.ChildByFieldName("condition"))
	if err != nil {
		return err
	}
	if taken, ok := constBool(c); ok {
		// decided before the kernel runs (a NULL test): only the branch
		// taken is code
		if taken {
			return t.block(n.ChildByFieldName("consequence"))
		}
		if alt := n.ChildByFieldName("alternative"); alt != nil {
			if alt.Type() == "else_clause" {
				if cs := ts.Children(alt); len(cs) > 0 {
					alt = cs[len(cs)-1]
				}
			}
			return t.block(alt)
		}
		return nil
	}
	c = t.bind(c, "c")
	before := t.env.snapshot()
	outer := t.path
	t.path = and(outer, c)
	if err := t.block(n.ChildByFieldName("consequence")); err != nil {
		return err
	}
	thenEnv := t.env.snapshot()
	t.env.scopes = before
	before = t.env.snapshot()
	if alt := n.ChildByFieldName("alternative"); alt != nil {
		if alt.Type() == "else_clause" {
			cs := ts.Children(alt)
			if len(cs) > 0 {
				alt = cs[len(cs)-1]
			}
		}
		t.path = and(outer, not(c))
		if err := t.block(alt); err != nil {
			return err
		}
	}
	t.path = outer
	elseEnv := t.env.snapshot()
	// merge
	for i := range before {
		for _, name := range slices.Sorted(maps.Keys(before[i])) { // in one order: the binds' names are stable
			bv := before[i][name]
			a, b := thenEnv[i][name], elseEnv[i][name]
			if a.py == b.py && a.k == b.k && a.sp == b.sp && a.red == b.red {
				t.env.scopes[i][name] = a
				continue
			}
			if a.acc != nil || b.acc != nil || a.lane0 || b.lane0 || a.red != b.red || a.ptr != nil || b.ptr != nil || mixable(a, b) != nil || mixable(c, a) != nil || mixable(c, b) != nil {
				return refuse(CodeUnsupported, "%s changes meaning inside a branch", name)
			}
			t.env.scopes[i][name] = t.bind(where(c, a, b, bv.ct), "v")
		}
	}
	return nil
}

// noTripCount refuses a loop without a constant trip count. One that
// synchronises the block every iteration orders its iterations (each reads
// the shared state the last one left: mmcv nms's gather_keep_from_mask
// walks the boxes in turn): a sequential scan, no rule template.
func (t *tr) noTripCount(n *ts.Node) error {
	if callsSync(n.ChildByFieldName("body"), t.u) {
		return refuse(CodeClass, "loop %q synchronises the block (__syncthreads) in every iteration of a runtime trip count: its iterations are ordered through shared memory (a sequential scan), which has no rule template", oneLine(t.u.text(n)))
	}
	return refuse(CodeUnsupported, "loop %q has no constant trip count", oneLine(t.u.text(n)))
}

func callsSync(n *ts.Node, u *unit) bool {
	if n == nil {
		return false
	}
	if n.Type() == "call_expression" && u.text(n.ChildByFieldName("function")) == "__syncthreads" {
		return true
	}
	for _, c := range ts.Children(n) {
		if callsSync(c, u) {
			return true
		}
	}
	return false
}

// unrolledFor unrolls a loop with a constant trip count (at most 64).
func (t *tr) unrolledFor(n *ts.Node) error {
	init := n.ChildByFieldName("initializer")
	condN := n.ChildByFieldName("condition")
	upd := n.ChildByFieldName("update")
	if init == nil || condN == nil || upd == nil || init.Type() != "declaration" {
		return refuse(CodeUnsupported, "loop %q", oneLine(t.u.text(n)))
	}
	t.env.push()
	defer t.env.pop()
	t.loops = append(t.loops, nil)
	defer func() { t.loops = t.loops[:len(t.loops)-1] }()
	if err := t.declaration(init); err != nil {
		return err
	}
	var name string
	for _, d := range ts.Children(init) {
		if d.Type() == "init_declarator" {
			name = declName(d.ChildByFieldName("declarator"), t.u)
		}
	}
	for iter := 0; ; iter++ {
		if iter > 64 {
			return refuse(CodeUnsupported, "loop with more than 64 iterations or no constant trip count")
		}
		v, _ := t.env.lookup(name)
		if _, ok := v.poly.constant(); !ok || v.k != kUniform {
			return t.noTripCount(n)
		}
		c, err := t.cond(condN)
		if err != nil {
			return err
		}
		switch c.py {
		case "(True)", "True":
		case "(False)", "False":
			return nil
		default:
			if ok, val := evalBoolConst(c.py); ok {
				if !val {
					return nil
				}
			} else {
				return t.noTripCount(n)
			}
		}
		if err := t.block(n.ChildByFieldName("body")); err != nil {
			return err
		}
		if err := t.exprStmt(upd); err != nil {
			return err
		}
	}
}

// constBool is a condition's value when it is a constant.
func constBool(c val) (bool, bool) {
	switch c.py {
	case "True", "(True)":
		return true, true
	case "False", "(False)":
		return false, true
	}
	return false, false
}

// evalBoolConst evaluates "(a op b)" of integer literals.
func evalBoolConst(s string) (bool, bool) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "("), ")")
	f := strings.Fields(s)
	if len(f) != 3 {
		return false, false
	}
	a, err1 := strconv.ParseInt(f[0], 10, 64)
	b, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false, false
	}
	switch f[1] {
	case "<":
		return true, a < b
	case "<=":
		return true, a <= b
	case ">":
		return true, a > b
	case ">=":
		return true, a >= b
	case "==":
		return true, a == b
	case "!=":
		return true, a != b
	}
	return false, false
}

// earlyReturn is a helper's return under a condition: its value (cast to
// the helper's type and bound, so later assignments leave it alone) for the
// threads on this path, and the rest of the helper runs for the others only
// (stores and carried values masked, as after a continue). A return inside
// a loop the helper itself runs is refused.
type earlyReturn struct {
	cond, v val
	bare    bool // `return;` in a void helper
}

func (t *tr) earlyReturn(v *val) error {
	if len(t.loops) > t.helperLoops {
		return refuse(CodeLoop, "a helper returns from inside a loop it runs")
	}
	er := earlyReturn{cond: t.bind(t.path, "m"), bare: v == nil}
	if v != nil {
		x := *v
		if t.helperType != "" && t.helperType != "auto" && t.helperType != "void" {
			var err error
			if x, err = t.castTo(x, t.helperType); err != nil {
				return err
			}
		}
		er.v = t.bind(x, "r")
	}
	t.early = append(t.early, er)
	if t.inRuntimeLoop() {
		t.narrow(not(t.path))
	} else {
		t.alive = and(t.alive, not(t.path))
	}
	return nil
}

// earlyResult is a helper's value with its early returns: the first one
// whose condition holds, else the final return.
func (t *tr) earlyResult(early []earlyReturn, final *val, name, rtype string) (*val, error) {
	if final == nil {
		for _, e := range early {
			if !e.bare {
				return nil, refuse(CodeUnsupported, "%s returns a value under a condition only", name)
			}
		}
		return nil, nil
	}
	r := *final
	if rtype != "" && rtype != "auto" && rtype != "void" {
		var err error
		if r, err = t.castTo(r, rtype); err != nil {
			return nil, err
		}
	}
	for i := len(early) - 1; i >= 0; i-- {
		if early[i].bare {
			return nil, refuse(CodeUnsupported, "%s returns both with and without a value", name)
		}
		r = where(early[i].cond, early[i].v, r, r.ct)
	}
	r = t.bind(r, "r")
	return &r, nil
}
