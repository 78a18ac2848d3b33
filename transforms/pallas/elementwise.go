package pallas

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// ewMode translates elementwise kernels. Every thread is one point of the
// domain (its global x/y/z index); the domain is flattened, padded and
// reshaped to lane-dense (rows, 128·k) blocks. Loads whose address is the
// domain position read their block directly; other data-independent
// addresses (broadcasts, strided views) are gathered by XLA in the wrapper;
// stores at the domain position write their block, others scatter in the
// wrapper, masked by the guard.
type ewMode struct {
	dims    map[string]bool
	extent  map[string]val
	loads   []ewAccess
	stores  []ewAccess
	stored  map[string]bool
	touched bool // a store happened (guards after it are masks, not extents)
}

type ewAccess struct {
	name  string
	param string
	idx   val
	mask  val
}

func newEWMode() *ewMode {
	return &ewMode{dims: map[string]bool{}, extent: map[string]val{}, stored: map[string]bool{}}
}

func zeroIdx() val { return val{py: "0", ct: "int", k: kUniform, poly: pconst(0)} }

// paramVal is a kernel parameter as a value (shared by the modes).
func paramVal(t *tr, name string) (val, bool, error) {
	p, ok := t.params[name]
	if !ok {
		return val{}, false, nil
	}
	if p.Kind == "pointer" {
		w := 0
		switch {
		case strings.Contains(p.CType, "float4"):
			w = 4
		case strings.Contains(p.CType, "float2"):
			w = 2
		case regexp.MustCompile(`\b(int|uint|double|half|char|short|longlong|ulonglong)[1-4]\b`).MatchString(p.CType):
			return val{}, true, refuse(CodeUnsupported, "vector pointer type %s", p.CType)
		}
		return val{ct: "ptr", k: kUniform, ptr: &ptrv{base: name, off: zeroIdx(), width: w}}, true, nil
	}
	ct, err := scalarCT(p)
	if err != nil {
		return val{}, true, err
	}
	v := val{py: "p_" + name, ct: ct, k: kUniform, poly: patom("p:" + name)}
	if p.Role == "size" && p.Expr != "" {
		if e, err := kernels.ParseExpr(p.Expr); err == nil {
			v.poly = exprPoly(e)
		}
	}
	if !isInt(ct) {
		v.poly = nil
	}
	return v, true, nil
}

func scalarCT(p *kernels.Param) (string, error) {
	switch p.DType {
	case "float32", "float16", "bfloat16":
		return "float", nil
	case "float64":
		return "double", nil
	case "int32", "int16", "int8":
		return "int", nil
	case "uint32", "uint8", "uint16":
		return "uint", nil
	case "int64":
		return "int64", nil
	case "uint64":
		return "uint64", nil
	case "bool":
		return "bool", nil
	}
	return "", refuse(CodeDType, "parameter %s has dtype %s", p.Name, p.DType)
}

func elemCT(p *kernels.Param) (string, error) {
	if p.DType == "float64" {
		return "", refuse(CodeDType, "%s is float64: TPU kernels have no float64", p.Name)
	}
	return scalarCT(p)
}

func (m *ewMode) ident(t *tr, name string) (val, bool, error) { return paramVal(t, name) }

func launchVal(t *tr, which, dim string) val {
	i := map[string]int{"x": 0, "y": 1, "z": 2}[dim]
	var s string
	if which == "block" {
		s = t.spec.Launch.Block[i]
	} else {
		s = t.spec.Launch.Grid[i]
	}
	name := map[string]string{"block": "bd_", "grid": "gd_"}[which] + dim
	v := val{py: name, ct: "uint", k: kUniform}
	if e, err := kernels.ParseExpr(s); err == nil {
		v.poly = exprPoly(e)
		if c, ok := v.poly.constant(); ok {
			v.py = strconv.FormatInt(c, 10)
		}
	}
	return v
}

func (m *ewMode) field(t *tr, obj, fld string) (val, error) {
	if fld != "x" && fld != "y" && fld != "z" {
		return val{}, refuse(CodeUnsupported, "%s.%s", obj, fld)
	}
	switch obj {
	case "blockDim":
		return launchVal(t, "block", fld), nil
	case "gridDim":
		return launchVal(t, "grid", fld), nil
	case "threadIdx", "blockIdx":
		bd := launchVal(t, "block", fld)
		gd := launchVal(t, "grid", fld)
		iv, _ := m.globalIdx(t, fld)
		if c, ok := bd.poly.constant(); ok && c == 1 {
			if obj == "threadIdx" {
				return val{py: "0", ct: "uint", k: kUniform, poly: pconst(0)}, nil
			}
			return iv, nil
		}
		if c, ok := gd.poly.constant(); ok && c == 1 {
			if obj == "blockIdx" {
				return val{py: "0", ct: "uint", k: kUniform, poly: pconst(0)}, nil
			}
			return iv, nil
		}
		fn := "_c_rem"
		if obj == "blockIdx" {
			fn = "_c_div"
		}
		py := fmt.Sprintf("%s(iv_%s, %s, jnp.int32)", fn, fld, bd.py)
		return val{py: py, ct: "uint", k: kIndex, poly: patom("o:" + py)}, nil
	}
	return val{}, refuse(CodeUnsupported, "%s.%s", obj, fld)
}

func (m *ewMode) globalIdx(t *tr, dim string) (val, bool) {
	m.dims[dim] = true
	return val{py: "iv_" + dim, ct: "int", k: kIndex, poly: patom("v:" + dim)}, true
}

func (m *ewMode) load(t *tr, p ptrv, idx val) (val, error) {
	if p.shared {
		return val{}, refuse(CodeUnsupported, "shared memory in an elementwise kernel")
	}
	prm := t.params[p.base]
	if prm == nil {
		return val{}, refuse(CodeUnsupported, "load from %s", p.base)
	}
	if idx.k == kData {
		return val{}, refuse(CodeDataIndex, "%s is read at a data-dependent index", p.base)
	}
	if m.stored[p.base] {
		return val{}, refuse(CodeUnsupported, "%s is read after this thread wrote it", p.base)
	}
	if prm.Role == "output" {
		return val{}, refuse(CodeUnsupported, "output %s is read before it is written", p.base)
	}
	ct, err := elemCT(prm)
	if err != nil {
		return val{}, err
	}
	for _, l := range m.loads {
		if l.param == p.base && l.idx.py == idx.py {
			return val{py: l.name, ct: ct, k: kData}, nil
		}
	}
	name := fmt.Sprintf("ld%d", len(m.loads))
	m.loads = append(m.loads, ewAccess{name: name, param: p.base, idx: idx})
	return val{py: name, ct: ct, k: kData}, nil
}

func (m *ewMode) store(t *tr, p ptrv, idx val, v val) error {
	prm := t.params[p.base]
	if p.shared || prm == nil || (prm.Role != "output" && prm.Role != "inout") {
		return refuse(CodeUnsupported, "store to %s (not an output)", p.base)
	}
	if idx.k == kData {
		return refuse(CodeDataIndex, "%s is written at a data-dependent index", p.base)
	}
	mask := and(t.alive, t.path)
	if mask.k == kData {
		return refuse(CodeUnsupported, "%s is written under a data-dependent condition", p.base)
	}
	ct, err := elemCT(prm)
	if err != nil {
		return err
	}
	cv, err := t.castTo(v, ct)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("st%d", len(m.stores))
	m.stores = append(m.stores, ewAccess{name: name, param: p.base, idx: idx, mask: mask})
	m.stored[p.base] = true
	m.touched = true
	t.emit("%s_ref[...] = _fill(%s, %s_ref)", name, cv.py, name)
	return nil
}

func (m *ewMode) call(t *tr, name string, args []*ts.Node) (val, bool, error) {
	switch {
	case name == "__syncthreads" || strings.HasPrefix(name, "__shfl") || strings.HasPrefix(name, "atomic"):
		return val{}, true, refuse(CodeUnsupported, "%s in an elementwise kernel", name)
	}
	return val{}, false, nil
}

// stmt handles guards that bound the domain and grid-stride loops.
func (m *ewMode) stmt(t *tr, n *ts.Node) (bool, error) {
	if t.depth > 0 || !isTrue(t.path) || !isTrue(t.alive) {
		return false, nil
	}
	switch n.Type() {
	case "if_statement":
		if m.touched || n.ChildByFieldName("alternative") != nil {
			return false, nil
		}
		cons := n.ChildByFieldName("consequence")
		isReturn := cons.Type() == "return_statement" || cons.Type() == "compound_statement" && len(ts.Children(cons)) == 1 && ts.Children(cons)[0].Type() == "return_statement"
		c := strip(n.ChildByFieldName("condition"))
		bounds, ok, err := m.guardBounds(t, c, isReturn)
		if err != nil || !ok {
			return false, nil
		}
		for d, e := range bounds {
			m.extent[d] = e
		}
		if isReturn {
			return true, nil
		}
		return true, t.block(cons)
	case "for_statement":
		return m.gridStride(t, n)
	}
	return false, nil
}

// guardBounds reads "v < E" (&& ...) — or "v >= E" (|| ...) before a return —
// where v is an unbounded domain index and E is uniform.
func (m *ewMode) guardBounds(t *tr, c *ts.Node, negated bool) (map[string]val, bool, error) {
	c = strip(c)
	if c.Type() != "binary_expression" {
		return nil, false, nil
	}
	op := t.u.text(c.ChildByFieldName("operator"))
	join := "&&"
	cmp := "<"
	if negated {
		join, cmp = "||", ">="
	}
	if op == join {
		a, ok, err := m.guardBounds(t, c.ChildByFieldName("left"), negated)
		if !ok || err != nil {
			return nil, false, err
		}
		b, ok, err := m.guardBounds(t, c.ChildByFieldName("right"), negated)
		if !ok || err != nil {
			return nil, false, err
		}
		for k, v := range b {
			if _, dup := a[k]; dup {
				return nil, false, nil
			}
			a[k] = v
		}
		return a, true, nil
	}
	if op != cmp {
		return nil, false, nil
	}
	saved := len(t.lines)
	v, err := t.expr(c.ChildByFieldName("left"))
	if err != nil {
		t.lines = t.lines[:saved]
		return nil, false, nil
	}
	e, err := t.expr(c.ChildByFieldName("right"))
	if err != nil || e.k != kUniform || !isInt(e.ct) || v.poly == nil || len(v.poly) != 1 || t.lines == nil && false {
		t.lines = t.lines[:saved]
		return nil, false, nil
	}
	for key, coef := range v.poly {
		if coef != 1 || !strings.HasPrefix(key, "v:") || strings.Contains(key, "*") {
			return nil, false, nil
		}
		d := strings.TrimPrefix(key, "v:")
		if _, set := m.extent[d]; set {
			return nil, false, nil
		}
		return map[string]val{d: e}, true, nil
	}
	return nil, false, nil
}

// gridStride: for (i = <global x>; i < E; i += blockDim.x * gridDim.x) body.
func (m *ewMode) gridStride(t *tr, n *ts.Node) (bool, error) {
	init, cond, upd := n.ChildByFieldName("initializer"), strip(n.ChildByFieldName("condition")), strip(n.ChildByFieldName("update"))
	if init == nil || cond == nil || upd == nil || init.Type() != "declaration" || m.touched {
		return false, nil
	}
	var name string
	var iv val
	for _, d := range ts.Children(init) {
		if d.Type() == "init_declarator" {
			name = declName(d.ChildByFieldName("declarator"), t.u)
			v, err := t.expr(d.ChildByFieldName("value"))
			if err != nil {
				return false, nil
			}
			iv = v
		}
	}
	if len(iv.poly) != 1 || iv.poly["v:x"] != 1 {
		return false, nil
	}
	if upd.Type() != "assignment_expression" || t.u.text(upd.ChildByFieldName("operator")) != "+=" || t.u.text(upd.ChildByFieldName("left")) != name {
		return false, nil
	}
	stride := strings.Join(strings.Fields(t.u.text(stripCasts(upd.ChildByFieldName("right"), t.u))), "")
	stride = strings.NewReplacer("(", "", ")", "").Replace(stride)
	if stride != "blockDim.x*gridDim.x" && stride != "gridDim.x*blockDim.x" {
		return false, nil
	}
	if cond.Type() != "binary_expression" || t.u.text(cond.ChildByFieldName("operator")) != "<" || t.u.text(strip(cond.ChildByFieldName("left"))) != name {
		return false, nil
	}
	e, err := t.expr(cond.ChildByFieldName("right"))
	if err != nil || e.k != kUniform {
		return false, nil
	}
	if _, set := m.extent["x"]; set {
		return false, nil
	}
	m.extent["x"] = e
	t.env.push()
	defer t.env.pop()
	t.env.declare(name, iv)
	return true, t.block(n.ChildByFieldName("body"))
}

// ---- code generation ----

func (m *ewMode) generate(t *tr, k *kernels.Kernel) (string, error) {
	var dims []string
	for _, d := range []string{"z", "y", "x"} {
		if m.dims[d] {
			dims = append(dims, d)
		}
	}
	if len(dims) == 0 {
		return "", refuse(CodeUnsupported, "the kernel never uses its thread index")
	}
	if len(m.stores) == 0 {
		return "", refuse(CodeUnsupported, "the kernel writes no output")
	}
	ext := map[string]val{}
	for _, d := range dims {
		if e, ok := m.extent[d]; ok {
			ext[d] = e
			continue
		}
		g, b := launchVal(t, "grid", d), launchVal(t, "block", d)
		ext[d] = val{py: "(" + g.py + " * " + b.py + ")", ct: "int", k: kUniform, poly: g.poly.mul(b.poly)}
	}
	flat, size := pconst(0), pconst(1)
	for _, d := range dims {
		flat = flat.mul(ext[d].poly).add(patom("v:"+d), 1)
		size = size.mul(ext[d].poly)
	}
	sizeOf := func(name string) poly {
		p := pconst(1)
		for _, s := range t.params[name].Shape {
			e, err := kernels.ParseExpr(s)
			if err != nil {
				return nil
			}
			p = p.mul(exprPoly(e))
		}
		return p
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	// kernel
	var refNames []string
	for _, l := range m.loads {
		refNames = append(refNames, l.name+"_ref")
	}
	for _, s := range m.stores {
		refNames = append(refNames, s.name+"_ref")
	}
	uniforms := t.uniformNames(dims)
	w("def _kernel(*refs, U):")
	w("    %s, = refs", strings.Join(refNames, ", "))
	for _, u := range uniforms {
		w("    %s = U[%q]", u, u)
	}
	w("    shape = (U[\"BR\"], U[\"LANES\"])")
	w("    d = (pl.program_id(0) * U[\"BR\"] + lax.broadcasted_iota(jnp.int32, shape, 0)) * U[\"LANES\"] + lax.broadcasted_iota(jnp.int32, shape, 1)")
	writeIndexVars(w, "    ", dims, ext)
	for _, l := range m.loads {
		w("    %s = %s_ref[...].astype(%s)", l.name, l.name, computeType(t.params[l.param]))
	}
	for _, line := range t.lines {
		w("    %s", line)
	}
	w("")
	w("")
	// wrapper
	w("def run(args, *, interpret):")
	t.writeArgs(w)
	for _, d := range dims {
		w("    E_%s = %s", d, ext[d].py)
	}
	var dprod []string
	for _, d := range dims {
		dprod = append(dprod, "E_"+d)
	}
	w("    D = %s", strings.Join(dprod, " * "))
	outs := t.outputParams()
	w("    if D <= 0:")
	w("        return {%s}", t.emptyResult(outs))
	w("    LANES, BR, RP = _layout(D, %d)", t.sublanes())
	w("    DP = RP * LANES")
	w("    d = jnp.arange(DP, dtype=jnp.int32)")
	writeIndexVars(w, "    ", dims, ext)
	w("    ins = [")
	for _, l := range m.loads {
		if l.idx.poly.equal(flat) && sizeOf(l.param).equal(size) {
			w("        _blocked(p_%s, DP, LANES),", l.param)
		} else {
			w("        _gather(p_%s, %s, DP, LANES),", l.param, l.idx.py)
		}
	}
	w("    ]")
	var ushow []string
	for _, u := range uniforms {
		ushow = append(ushow, fmt.Sprintf("%q: %s", u, u))
	}
	w("    U = {%s}", strings.Join(append(ushow, `"BR": BR`, `"LANES": LANES`), ", "))
	w("    spec = pl.BlockSpec((BR, LANES), lambda i: (i, 0))")
	var oshapes []string
	for _, s := range m.stores {
		oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct((RP, LANES), %s)", blockDType(t.params[s.param])))
	}
	w("    outs = pl.pallas_call(")
	w("        functools.partial(_kernel, U=U),")
	w("        grid=(RP // BR,),")
	w("        in_specs=[spec] * len(ins),")
	w("        out_specs=[spec] * %d,", len(m.stores))
	w("        out_shape=[%s],", strings.Join(oshapes, ", "))
	w("        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",)),")
	w("        interpret=interpret,")
	w("    )(*ins)")
	count := map[string]int{}
	for _, s := range m.stores {
		count[s.param]++
	}
	done := map[string]bool{}
	for i, s := range m.stores {
		prm := t.params[s.param]
		shape := t.shapePy(prm)
		if count[s.param] == 1 && isTrue(s.mask) && s.idx.poly.equal(flat) && sizeOf(s.param).equal(size) {
			w("    r_%s = _unblock(outs[%d], D, %s, %s)", s.param, i, shape, dtypePy(prm.DType))
			done[s.param] = true
			continue
		}
		if !done[s.param] {
			if prm.Role == "inout" {
				w("    r_%s = p_%s.reshape(-1)", s.param, s.param)
			} else {
				w("    r_%s = jnp.zeros((%s,), %s)", s.param, shapeProd(shape), dtypePy(prm.DType))
			}
			done[s.param] = true
		}
		w("    r_%s = _scatter(r_%s, %s, %s, outs[%d], d, D)", s.param, s.param, s.idx.py, maskPy(s.mask), i)
	}
	var res []string
	for _, p := range outs {
		if !done[p.Name] {
			return "", refuse(CodeUnsupported, "output %s is never written", p.Name)
		}
		res = append(res, fmt.Sprintf("%q: r_%s.reshape(%s)", p.Name, p.Name, t.shapePy(p)))
	}
	w("    return {%s}", strings.Join(res, ", "))
	return b.String(), nil
}

func maskPy(v val) string {
	if isTrue(v) {
		return "True"
	}
	return v.py
}

func shapeProd(shape string) string {
	s := strings.TrimSuffix(strings.TrimPrefix(shape, "("), ")")
	s = strings.TrimSuffix(s, ",")
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = "(" + strings.TrimSpace(parts[i]) + ")"
	}
	return strings.Join(parts, " * ")
}

func writeIndexVars(w func(string, ...any), ind string, dims []string, ext map[string]val) {
	rest := "d"
	for i := len(dims) - 1; i >= 0; i-- {
		d := dims[i]
		if i == 0 {
			w("%siv_%s = %s", ind, d, rest)
			break
		}
		w("%siv_%s = _c_rem(%s, E_%s, jnp.int32)", ind, d, rest, d)
		w("%sq_%s = _c_div(%s, E_%s, jnp.int32)", ind, d, rest, d)
		rest = "q_" + d
	}
}

func computeType(p *kernels.Param) string {
	ct, _ := elemCT(p)
	return jnpType(ct)
}

func blockDType(p *kernels.Param) string {
	if p.DType == "float16" {
		return "jnp.float32"
	}
	return dtypePy(p.DType)
}

func dtypePy(dt string) string {
	switch dt {
	case "bool":
		return "jnp.bool_"
	case "int64":
		return "jnp.int32"
	case "uint64":
		return "jnp.uint32"
	}
	return "jnp." + dt
}

// uniformNames are the Python names of every uniform value the code may use.
func (t *tr) uniformNames(dims []string) []string {
	var out []string
	for _, p := range t.spec.Params {
		if p.Kind != "pointer" {
			out = append(out, "p_"+p.Name)
		}
	}
	for _, s := range t.spec.Symbols {
		out = append(out, "s_"+s)
	}
	for _, d := range []string{"x", "y", "z"} {
		out = append(out, "bd_"+d, "gd_"+d)
	}
	for _, d := range dims {
		out = append(out, "E_"+d)
	}
	return out
}

// writeArgs unpacks args, derives the size symbols and the launch.
func (t *tr) writeArgs(w func(string, ...any)) {
	for _, p := range t.spec.Params {
		if p.Kind == "pointer" && p.Role == "output" {
			continue
		}
		if p.Kind == "pointer" && p.DType == "float16" {
			w("    p_%s = args[%q].astype(jnp.float32)", p.Name, p.Name)
			continue
		}
		w("    p_%s = args[%q]", p.Name, p.Name)
	}
	for _, s := range t.spec.Symbols {
		w("    s_%s = %s", s, t.symbolSource(s))
	}
	for i, d := range []string{"x", "y", "z"} {
		w("    bd_%s = %s", d, exprPyString(t.spec.Launch.Block[i]))
		w("    gd_%s = %s", d, exprPyString(t.spec.Launch.Grid[i]))
	}
}

func (t *tr) symbolSource(s string) string {
	for _, p := range t.spec.Params {
		if p.Kind != "pointer" && p.Role == "size" && strings.TrimSpace(p.Expr) == s {
			return "int(p_" + p.Name + ")"
		}
	}
	for _, p := range t.spec.Params {
		if p.Kind == "pointer" && p.Role != "output" {
			for i, dim := range p.Shape {
				if strings.TrimSpace(dim) == s {
					return fmt.Sprintf("p_%s.shape[%d]", p.Name, i)
				}
			}
		}
	}
	for _, p := range t.spec.Params {
		if p.Kind == "pointer" {
			for i, dim := range p.Shape {
				if strings.TrimSpace(dim) == s {
					return fmt.Sprintf("p_%s.shape[%d]", p.Name, i)
				}
			}
		}
	}
	t.missing = append(t.missing, s)
	return "None"
}

func exprPyString(s string) string {
	e, err := kernels.ParseExpr(s)
	if err != nil {
		return "None"
	}
	return exprPy(e)
}

func exprPy(e *kernels.Expr) string {
	switch e.Op {
	case "lit":
		return strconv.FormatInt(e.Val, 10)
	case "sym":
		return "s_" + e.Name
	case "neg":
		return "(-" + exprPy(e.L) + ")"
	case "/":
		return "_c_div(" + exprPy(e.L) + ", " + exprPy(e.R) + ", jnp.int32)"
	case "%":
		return "_c_rem(" + exprPy(e.L) + ", " + exprPy(e.R) + ", jnp.int32)"
	case "min", "max":
		return e.Op + "(" + exprPy(e.L) + ", " + exprPy(e.R) + ")"
	case "&&":
		return "(" + exprPy(e.L) + " and " + exprPy(e.R) + ")"
	}
	return "(" + exprPy(e.L) + " " + e.Op + " " + exprPy(e.R) + ")"
}

func (t *tr) shapePy(p *kernels.Param) string {
	var parts []string
	for _, s := range p.Shape {
		parts = append(parts, exprPyString(s))
	}
	return "(" + strings.Join(parts, ", ") + ",)"
}

func (t *tr) outputParams() []*kernels.Param {
	var out []*kernels.Param
	for i := range t.spec.Params {
		p := &t.spec.Params[i]
		if p.Kind == "pointer" && (p.Role == "output" || p.Role == "inout") {
			out = append(out, p)
		}
	}
	return out
}

func (t *tr) emptyResult(outs []*kernels.Param) string {
	var res []string
	for _, p := range outs {
		if p.Role == "inout" {
			res = append(res, fmt.Sprintf("%q: p_%s", p.Name, p.Name))
		} else {
			res = append(res, fmt.Sprintf("%q: jnp.zeros(%s, %s)", p.Name, t.shapePy(p), dtypePy(p.DType)))
		}
	}
	return strings.Join(res, ", ")
}

// sublanes is the row multiple the blocks need: 8 for 32-bit data, 16 for
// 16-bit, 32 for 8-bit.
func (t *tr) sublanes() int {
	sub := 8
	for _, p := range t.spec.Params {
		if p.Kind != "pointer" {
			continue
		}
		switch p.DType {
		case "bfloat16", "int16", "uint16":
			sub = max(sub, 16)
		case "int8", "uint8", "bool":
			sub = max(sub, 32)
		}
	}
	return sub
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
