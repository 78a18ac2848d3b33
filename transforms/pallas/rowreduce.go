package pallas

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// space is where a row-reduction value lives.
type space int

const (
	spUniform space = iota // the same for the whole block (one row): (BR, 1)
	spThread               // one per thread: (BR, T)
	spRow                  // one per element of the row loop: (BR, LP)
)

func maxSpace(vs ...val) space {
	s := spUniform
	for _, v := range vs {
		if v.sp > s {
			s = v.sp
		}
	}
	return s
}

// mixable refuses combining per-thread and per-row-element values (their
// shapes differ) and using a partial accumulator outside a block reduction.
func mixable(vs ...val) error {
	var th, row bool
	for _, v := range vs {
		if v.acc != nil {
			return refuse(CodeUnsupported, "a per-thread partial is used before its block reduction")
		}
		th = th || v.sp == spThread
		row = row || v.sp == spRow
	}
	if th && row {
		return refuse(CodeUnsupported, "per-thread and per-row-element values are combined")
	}
	return nil
}

// rowMode translates kernels where one block handles one row: every value
// is vectorised over a batch of BR rows (one per block) and either the
// block's threads (T), the elements a row loop visits (the row), or neither
// (uniform per row). Row loops, shared-memory row caches, per-thread partial
// accumulators, warp-shuffle and shared-memory tree reductions are
// recognised by structure and become whole-row jnp reductions.
type rowMode struct {
	T int64 // threads per row: blockDim.x (a constant)
	// Ry is blockDim.y: rows per block, each y group of T threads one row
	// (row = blockIdx.x * blockDim.y + threadIdx.y); 1 for one row a block.
	Ry int64
	// rowBound is E of a leading `if (row >= E) return;`: virtual rows past
	// it write nothing the outputs keep (nil: no such guard).
	rowBound poly
	L        *val // bound of the row loops
	views    []*rowView
	shared   map[string]val
	reduced  map[string]string // shared array -> op after a tree reduction
	outs     []*rowOut
	inLoop   int    // env depth at the current row loop (0: none)
	jmask    string // the current row loop's mask
	elected  bool   // inside if (threadIdx.x == c)
	helpers  map[string]*reduceInfo
}

type rowView struct {
	name  string
	param string
	S     poly // row stride (0: one row broadcast to every block)
	spy   string
}

type rowOut struct {
	name  string
	param string
	S     poly
	spy   string
	blk   string // Python name of the block value being built
}

type reduceInfo struct {
	op    string
	bcast bool // every thread gets the result
	block bool // reduces across warps (or the block is one warp)
}

func newRowMode() *rowMode {
	return &rowMode{shared: map[string]val{}, reduced: map[string]string{}, helpers: map[string]*reduceInfo{}}
}

func (m *rowMode) prepare(t *tr) error {
	l := t.spec.Launch
	m.Ry = 1
	for i := 1; i < 3; i++ {
		for _, s := range []string{l.Grid[i], l.Block[i]} {
			if i == 1 && s == l.Block[1] {
				// several rows per block: blockDim.y groups of blockDim.x threads
				if e, err := kernels.ParseExpr(s); err == nil {
					if c, ok := exprPoly(e).constant(); ok && c >= 1 && c <= 64 {
						m.Ry = c
						continue
					}
				}
			}
			if e, err := kernels.ParseExpr(s); err != nil || exprPoly(e) == nil || !exprPoly(e).equal(pconst(1)) {
				return refuse(CodeUnsupported, "row reductions need a 1-D launch (one block per row) or a constant blockDim.y (rows per block); grid/block %s is %s", []string{"x", "y", "z"}[i], s)
			}
		}
	}
	e, err := kernels.ParseExpr(l.Block[0])
	if err != nil {
		return refuse(CodeUnsupported, "block size %q", l.Block[0])
	}
	c, ok := exprPoly(e).constant()
	if !ok || c <= 0 || c > 1024 {
		return refuse(CodeUnsupported, "row reductions need a constant block size (got %s)", l.Block[0])
	}
	m.T = c
	return nil
}

func (m *rowMode) ident(t *tr, name string) (val, bool, error) {
	if t.u.shared[name] && m.Ry > 1 {
		return val{}, true, refuse(CodeUnsupported, "shared memory %s in a block of %d rows (the rows' slices are not told apart)", name, m.Ry)
	}
	if t.u.shared[name] {
		return val{ct: "ptr", k: kUniform, ptr: &ptrv{base: name, shared: true, off: zeroIdx()}}, true, nil
	}
	return paramVal(t, name)
}

func (m *rowMode) field(t *tr, obj, fld string) (val, error) {
	if fld == "y" && m.Ry > 1 {
		// the block's rows: B is the row (blockIdx.x * Ry + threadIdx.y)
		switch obj {
		case "threadIdx":
			return val{py: fmt.Sprintf("(B %% %d)", m.Ry), ct: "uint", k: kIndex, poly: pvar("ty")}, nil
		case "blockDim":
			return val{py: strconv.FormatInt(m.Ry, 10), ct: "uint", k: kUniform, poly: pconst(m.Ry)}, nil
		}
	}
	if fld == "x" && obj == "blockIdx" && m.Ry > 1 {
		return val{py: fmt.Sprintf("(B // %d)", m.Ry), ct: "uint", k: kIndex, poly: pvar("bx")}, nil
	}
	if fld != "x" {
		if obj == "threadIdx" || obj == "blockIdx" {
			return val{py: "0", ct: "uint", k: kUniform, poly: pconst(0)}, nil
		}
		return val{py: "1", ct: "uint", k: kUniform, poly: pconst(1)}, nil
	}
	switch obj {
	case "threadIdx":
		return val{py: "tid", ct: "uint", k: kIndex, sp: spThread, poly: pvar("t")}, nil
	case "blockIdx":
		return val{py: "B", ct: "uint", k: kIndex, poly: pvar("b")}, nil
	case "blockDim":
		return val{py: strconv.FormatInt(m.T, 10), ct: "uint", k: kUniform, poly: pconst(m.T)}, nil
	case "gridDim":
		return launchVal(t, "grid", "x"), nil
	}
	return val{}, refuse(CodeUnsupported, "%s.%s", obj, fld)
}

// rowPoly writes blockIdx.x·Ry·M + threadIdx.y·M as row·M: with several
// rows per block, a y group's row is the row index B.
func (m *rowMode) rowPoly(p poly) poly {
	if m.Ry <= 1 || p == nil {
		return p
	}
	out := poly{}
	for k, v := range p {
		out[k] = v
	}
	for k, v := range p {
		rest, ok := dropAtom(monomial(k), atom{atomVar, "ty"})
		if !ok {
			continue
		}
		bx := monomialKey(append(append([]atom{}, rest...), atom{atomVar, "bx"}))
		if out[bx] != v*m.Ry || out[k] != v {
			continue
		}
		delete(out, k)
		delete(out, bx)
		out[monomialKey(append(rest, atom{atomVar, "b"}))] += v
	}
	return out
}

// dropAtom returns the atoms of a monomial without the last occurrence of
// a, and whether a occurs.
func dropAtom(atoms []atom, a atom) ([]atom, bool) {
	at := -1
	for i, x := range atoms {
		if x == a {
			at = i
		}
	}
	if at < 0 {
		return atoms, false
	}
	return append(append([]atom{}, atoms[:at]...), atoms[at+1:]...), true
}

// splitB returns (S, C) with idx = v:b * S + C.
func splitB(p poly) (poly, poly) {
	if p == nil {
		return nil, nil
	}
	s, c := poly{}, poly{}
	for k, v := range p {
		rest, ok := dropAtom(monomial(k), atom{atomVar, "b"})
		if !ok {
			c[k] = v
			continue
		}
		s[monomialKey(rest)] += v
	}
	return s, c
}

// polyPy writes a uniform poly as Python; false when it has an index
// variable or a varying sub-expression.
func polyPy(p poly) (string, bool) {
	if p == nil {
		return "", false
	}
	if len(p) == 0 {
		return "0", true
	}
	var terms []string
	for _, k := range sortedKeys(p) {
		coef := p[k]
		var fs []string
		for _, a := range monomial(k) {
			switch a.kind {
			case atomSize:
				fs = append(fs, "s_"+a.name)
			case atomParam:
				fs = append(fs, "p_"+a.name)
			case atomOpaque:
				fs = append(fs, "("+a.name+")")
			default:
				return "", false
			}
		}
		if coef != 1 || len(fs) == 0 {
			fs = append([]string{strconv.FormatInt(coef, 10)}, fs...)
		}
		terms = append(terms, strings.Join(fs, " * "))
	}
	return "(" + strings.Join(terms, " + ") + ")", true
}

func (m *rowMode) view(t *tr, param string, S poly) (*rowView, error) {
	for _, v := range m.views {
		if v.param == param && v.S.equal(S) {
			return v, nil
		}
	}
	spy, ok := polyPy(S)
	if !ok {
		return nil, refuse(CodeUnsupported, "row stride of %s cannot be computed from the sizes", param)
	}
	v := &rowView{name: fmt.Sprintf("vw%d", len(m.views)), param: param, S: S, spy: spy}
	m.views = append(m.views, v)
	return v, nil
}

func (m *rowMode) load(t *tr, p ptrv, idx val) (val, error) {
	if idx.k == kData {
		return val{}, refuse(CodeDataIndex, "%s is read at a data-dependent index", p.base)
	}
	if p.shared {
		sv, ok := m.shared[p.base]
		if !ok {
			return val{}, refuse(CodeUnsupported, "shared %s is read before it is written", p.base)
		}
		if op, red := m.reduced[p.base]; red {
			if c, ok := idx.poly.constant(); ok && c == 0 {
				return m.reduceThreads(t, sv, op, false)
			}
			return val{}, refuse(CodeUnsupported, "shared %s is read at %s after its tree reduction", p.base, idx.py)
		}
		switch {
		case sv.sp == spRow && idx.poly.equal(pvar("j")), sv.sp == spThread && idx.poly.equal(pvar("t")):
			return sv, nil
		}
		return val{}, refuse(CodeUnsupported, "shared %s is read at %s (only the thread's or the loop's own slot is understood)", p.base, idx.py)
	}
	prm := t.params[p.base]
	if prm == nil || prm.Role == "output" {
		return val{}, refuse(CodeUnsupported, "load from %s", p.base)
	}
	ct, err := elemCT(prm)
	if err != nil {
		return val{}, err
	}
	S, C := splitB(m.rowPoly(idx.poly))
	if S == nil {
		return val{}, refuse(CodeUnsupported, "the address of %s is not affine in the block index", p.base)
	}
	vw, err := m.view(t, p.base, S)
	if err != nil {
		return val{}, err
	}
	ref := vw.name + "_ref"
	switch {
	case C.equal(pvar("j")):
		if m.L == nil || !S.equal(m.L.poly) && len(S) != 0 {
			return val{}, refuse(CodeUnsupported, "%s rows (stride %s) differ from the row loop", p.base, vw.spy)
		}
		return t.bind(val{py: t.rowRead(ref, "...", prm), ct: ct, k: kData, sp: spRow}, "r"), nil
	case len(C) <= 2 && C[varKey("t")] == 1:
		c := C[""]
		if len(C) == 2 && c == 0 {
			return val{}, refuse(CodeUnsupported, "address of %s", p.base)
		}
		sc, ok := S.constant()
		if !ok || c < 0 || c+m.T > sc {
			return val{}, refuse(CodeUnsupported, "per-thread reads of %s leave the block's row", p.base)
		}
		return t.bind(val{py: t.rowRead(ref, fmt.Sprintf(":, %d:%d", c, c+m.T), prm), ct: ct, k: kData, sp: spThread}, "r"), nil
	}
	if c, ok := C.constant(); ok && c >= 0 {
		return t.bind(val{py: t.rowRead(ref, fmt.Sprintf(":, %d:%d", c, c+1), prm), ct: ct, k: kData}, "r"), nil
	}
	return val{}, refuse(CodeUnsupported, "address of %s is not a row, thread or fixed column position", p.base)
}

// rowRead is ref[index] cast to the compute type (float16 bits decoded).
func (t *tr) rowRead(ref, index string, p *kernels.Param) string {
	if t.bitsHalf(p) {
		return "_h2f(" + ref + "[" + index + "])"
	}
	return ref + "[" + index + "].astype(" + computeType(p) + ")"
}

func (m *rowMode) store(t *tr, p ptrv, idx val, v val) error {
	if idx.k == kData {
		return refuse(CodeDataIndex, "%s is written at a data-dependent index", p.base)
	}
	if p.shared && v.acc != nil && idx.poly.equal(pvar("t")) && isTrue(t.path) && !m.elected {
		// a per-thread partial parked in the thread's slot for a tree reduction
		m.shared[p.base] = v
		delete(m.reduced, p.base)
		return nil
	}
	if err := mixable(v); err != nil {
		return err
	}
	if p.shared {
		if !isTrue(t.path) && t.path.py != m.jmask {
			return refuse(CodeUnsupported, "shared %s is written under a condition", p.base)
		}
		switch {
		case m.inLoop > 0 && idx.poly.equal(pvar("j")) && v.sp != spThread:
			v.sp = spRow
			m.shared[p.base] = v
		case idx.poly.equal(pvar("t")) && v.sp != spRow && !m.elected:
			if v.sp == spUniform {
				v = t.bind(val{py: fmt.Sprintf("jnp.broadcast_to(%s, (BR, %d))", v.py, m.T), ct: v.ct, k: v.k, sp: spThread}, "v")
			}
			v.sp = spThread
			m.shared[p.base] = v
			delete(m.reduced, p.base)
		default:
			return refuse(CodeUnsupported, "shared %s is written at %s", p.base, idx.py)
		}
		return nil
	}
	prm := t.params[p.base]
	if prm == nil || (prm.Role != "output" && prm.Role != "inout") {
		return refuse(CodeUnsupported, "store to %s (not an output)", p.base)
	}
	if v.lane0 && !m.elected {
		return refuse(CodeUnsupported, "%s is written by every thread with a value only thread 0 holds", p.base)
	}
	cv, ct, err := t.castToElem(v, prm)
	if err != nil {
		return err
	}
	if !isTrue(t.alive) {
		return refuse(CodeUnsupported, "%s is written after a conditional return", p.base)
	}
	S, C := splitB(m.rowPoly(idx.poly))
	if S == nil {
		return refuse(CodeUnsupported, "the address of %s is not affine in the block index", p.base)
	}
	var o *rowOut
	for _, x := range m.outs {
		if x.param == p.base {
			o = x
		}
	}
	if o == nil {
		spy, ok := polyPy(S)
		if !ok {
			return refuse(CodeUnsupported, "row stride of %s cannot be computed from the sizes", p.base)
		}
		o = &rowOut{name: fmt.Sprintf("o%d", len(m.outs)), param: p.base, S: S, spy: spy}
		m.outs = append(m.outs, o)
	} else if !o.S.equal(S) {
		return refuse(CodeUnsupported, "%s is written with two row strides", p.base)
	}
	cond := t.path
	if m.inLoop > 0 && cond.py == m.jmask {
		cond = truth()
	}
	if !isTrue(cond) {
		return refuse(CodeUnsupported, "%s is written under a condition other than the row loop or an elected thread", p.base)
	}
	blk := t.fresh("ob")
	switch {
	case C.equal(pvar("j")) && m.inLoop > 0:
		if !S.equal(m.L.poly) {
			return refuse(CodeUnsupported, "%s rows differ from the row loop", p.base)
		}
		t.emit("%s = jnp.broadcast_to(%s, (BR, LP))", blk, cv.py)
	default:
		c, ok := C.constant()
		if !ok || c < 0 || cv.sp != spUniform {
			return refuse(CodeUnsupported, "%s is written at a position that is not the row loop's or a fixed column", p.base)
		}
		prev := "jnp.zeros((BR, " + o.name + "_cols), " + jnpType(ct) + ")"
		if o.blk != "" {
			prev = o.blk
		}
		t.emit("%s = jnp.where(lax.broadcasted_iota(jnp.int32, (BR, %s_cols), 1) == %d, %s, %s)", blk, o.name, c, cv.py, prev)
	}
	o.blk = blk
	return nil
}

// reduceThreads reduces a per-thread value (or a partial accumulator) over
// the block.
func (m *rowMode) reduceThreads(t *tr, v val, op string, lane0 bool) (val, error) {
	ident := map[string]string{"sum": "0.0", "fmax": "-jnp.inf", "fmin": "jnp.inf"}[op]
	red := map[string]string{"sum": "jnp.sum", "fmax": "jnp.max", "fmin": "jnp.min"}[op]
	if ident == "" {
		return val{}, refuse(CodeUnsupported, "reduction operator %s", op)
	}
	if !isFloat(v.ct) && v.acc == nil {
		return val{}, refuse(CodeUnsupported, "integer reductions are not supported by TPU kernels")
	}
	nanFree := func(x string) string {
		if op == "sum" {
			return x
		}
		return "jnp.where(jnp.isnan(" + x + "), " + ident + ", " + x + ")"
	}
	var py string
	switch {
	case v.acc != nil:
		if v.acc.op != op {
			return val{}, refuse(CodeUnsupported, "a %s accumulator is reduced with %s", v.acc.op, op)
		}
		r := t.bind(v.acc.row, "r")
		body := red + "(" + nanFree(r.py) + ", axis=1, keepdims=True)"
		init := conv(v.acc.init, "float")
		switch op {
		case "sum":
			if strings.TrimSpace(v.acc.init.py) == "jnp.float32(0.0)" {
				py = body
			} else {
				py = fmt.Sprintf("(%s * %d + %s)", init, m.T, body)
			}
		case "fmax":
			py = "jnp.fmax(" + init + ", " + body + ")"
		case "fmin":
			py = "jnp.fmin(" + init + ", " + body + ")"
		}
	case v.sp == spThread:
		py = red + "(" + nanFree(conv(v, "float")) + ", axis=1, keepdims=True)"
	default:
		return val{}, refuse(CodeUnsupported, "block reduction of a value that is not per-thread")
	}
	out := t.bind(val{py: py, ct: "float", k: kData, sp: spUniform}, "u")
	out.lane0 = lane0
	return out, nil
}

var reShflCall = regexp.MustCompile(`__shfl(_xor|_down)?(_sync)?\s*\(`)

// reduction recognises a __device__ helper that reduces its first argument
// across threads: shuffle loops (xor or down) and shared-memory trees, the
// combining operator read from the loop body, helpers it calls included.
func (m *rowMode) reduction(t *tr, name string) *reduceInfo {
	if ri, ok := m.helpers[name]; ok {
		return ri
	}
	m.helpers[name] = nil
	fn := t.u.funcs[name]
	if fn == nil {
		return nil
	}
	var ops []string
	xorOnly, shfl, sync := true, false, false
	var visit func(fn *ts.Node, depth int)
	visit = func(fn *ts.Node, depth int) {
		if depth > 4 {
			return
		}
		ts.Walk(fn, func(n *ts.Node) bool {
			switch n.Type() {
			case "call_expression":
				callee := t.u.text(n.ChildByFieldName("function"))
				if callee == "__syncthreads" {
					sync = true
				}
				if strings.HasPrefix(callee, "__shfl") {
					shfl = true
					if !strings.Contains(callee, "xor") {
						xorOnly = false
					}
				}
				if g := t.u.funcs[callee]; g != nil && g != fn {
					visit(g, depth+1)
				}
			case "assignment_expression":
				rhs := t.u.text(n.ChildByFieldName("right"))
				if !reShflCall.MatchString(rhs) {
					return true
				}
				switch op := t.u.text(n.ChildByFieldName("operator")); {
				case op == "+=":
					ops = append(ops, "sum")
				case op == "=" && regexp.MustCompile(`^\s*(fmaxf|fmax|max)\s*\(`).MatchString(rhs):
					ops = append(ops, "fmax")
				case op == "=" && regexp.MustCompile(`^\s*(fminf|fmin|min)\s*\(`).MatchString(rhs):
					ops = append(ops, "fmin")
				default:
					ops = append(ops, "?")
				}
			}
			return true
		})
	}
	visit(fn, 0)
	if !shfl || len(ops) == 0 {
		return nil
	}
	for _, o := range ops {
		if o != ops[0] || o == "?" {
			return nil
		}
	}
	text := t.u.text(fn)
	for _, g := range t.u.funcs {
		if strings.Contains(text, funcName(g, t.u.src)+"(") {
			text += t.u.text(g)
		}
	}
	ri := &reduceInfo{op: ops[0], block: sync || m.T <= 32, bcast: xorOnly || regexp.MustCompile(`=\s*\w+\s*\[\s*0\s*\]\s*;`).MatchString(text)}
	m.helpers[name] = ri
	return ri
}

func (m *rowMode) call(t *tr, name string, args []*ts.Node) (val, bool, error) {
	switch {
	case name == "__syncthreads" || name == "__syncwarp":
		return val{py: "None", ct: "void"}, true, nil
	case strings.HasPrefix(name, "atomic"):
		return val{}, true, refuse(CodeUnsupported, "%s: atomics have no TPU equivalent", name)
	case strings.HasPrefix(name, "__shfl"):
		return val{}, true, refuse(CodeUnsupported, "%s outside a recognised reduction helper", name)
	}
	ri := m.reduction(t, name)
	if ri == nil {
		return val{}, false, nil
	}
	if len(args) == 0 {
		return val{}, true, refuse(CodeUnsupported, "reduction helper %s without arguments", name)
	}
	if !ri.block {
		return val{}, true, refuse(CodeUnsupported, "%s reduces within a warp only, but blocks have %d threads", name, m.T)
	}
	if m.T%32 != 0 && m.T > 32 {
		return val{}, true, refuse(CodeUnsupported, "shuffle reductions over %d threads (not a multiple of 32)", m.T)
	}
	name0 := strings.TrimSpace(t.u.text(strip(args[0])))
	v, err := t.expr(args[0])
	if err != nil {
		return val{}, true, err
	}
	if v.acc == nil && v.sp != spThread {
		// an uninitialised or uniform input: reduce its per-thread copies
		if v.sp == spUniform && ri.op != "sum" {
			return v, true, nil
		}
		return val{}, true, refuse(CodeUnsupported, "%s is applied to %s, which is not a per-thread partial", name, name0)
	}
	out, err := m.reduceThreads(t, v, ri.op, !ri.bcast)
	return out, true, err
}

// stmt handles row loops, elected-thread branches, shared-memory tree loops
// and accumulations inside row loops.
func (m *rowMode) stmt(t *tr, n *ts.Node) (bool, error) {
	switch n.Type() {
	case "for_statement":
		if ok, err := m.shuffleLoop(t, n); ok || err != nil {
			return ok, err
		}
		if ok, err := m.treeLoop(t, n); ok || err != nil {
			return ok, err
		}
		return m.rowLoop(t, n)
	case "if_statement":
		if ok, err := m.rowGuard(t, n); ok || err != nil {
			return ok, err
		}
		c := strip(n.ChildByFieldName("condition"))
		if c.Type() == "binary_expression" && t.u.text(c.ChildByFieldName("operator")) == "==" && n.ChildByFieldName("alternative") == nil && t.depth == 0 {
			l, err1 := t.expr(c.ChildByFieldName("left"))
			r, err2 := t.expr(c.ChildByFieldName("right"))
			if err1 == nil && err2 == nil && l.poly.equal(pvar("t")) {
				if k, ok := r.poly.constant(); ok && k >= 0 && k < m.T && r.k == kUniform && !m.elected {
					m.elected = true
					err := t.block(n.ChildByFieldName("consequence"))
					m.elected = false
					return true, err
				}
			}
		}
	case "expression_statement":
		if m.inLoop == 0 {
			return false, nil
		}
		cs := ts.Children(n)
		if len(cs) == 0 || strip(cs[0]).Type() != "assignment_expression" {
			return false, nil
		}
		a := strip(cs[0])
		lhs := strip(a.ChildByFieldName("left"))
		if lhs.Type() != "identifier" {
			return false, nil
		}
		name := t.u.text(lhs)
		if si := t.env.scopeOf(name); si < 0 || si >= m.inLoop {
			return false, nil
		}
		return true, m.accumulate(t, name, t.u.text(a.ChildByFieldName("operator")), a.ChildByFieldName("right"))
	}
	return false, nil
}

var reShuffleStep = regexp.MustCompile(`^(\w+)\s*(\+=|=\s*(fmaxf|fmax|max|fminf|fmin|min)\s*\(\s*(\w+)\s*,)\s*__shfl_(xor|down)_sync\s*\(\s*[^,]+,\s*(\w+)\s*,\s*(\w+)\s*(,\s*32\s*)?\)\s*\)?;$`)

// shuffleLoop takes a warp-shuffle reduction written in the kernel body,
// `for (int o = T/2; o > 0; o >>= 1) v += __shfl_down_sync(mask, v, o);`
// (or v = fmaxf(v, __shfl_xor_sync(...)), fminf), over a row of one warp
// (blockDim.x = T <= 32): the row's reduction, every lane's for xor, lane
// 0's for down. false when the loop is not one.
func (m *rowMode) shuffleLoop(t *tr, n *ts.Node) (bool, error) {
	init, cond, upd, body := n.ChildByFieldName("initializer"), strip(n.ChildByFieldName("condition")), strip(n.ChildByFieldName("update")), n.ChildByFieldName("body")
	if init == nil || cond == nil || upd == nil || body == nil || init.Type() != "declaration" {
		return false, nil
	}
	if body.Type() == "compound_statement" {
		cs := ts.Children(body)
		if len(cs) != 1 {
			return false, nil
		}
		body = cs[0]
	}
	mm := reShuffleStep.FindStringSubmatch(strings.Join(strings.Fields(t.u.text(body)), " "))
	if mm == nil {
		return false, nil
	}
	ds := ts.Children(init)
	d := ds[len(ds)-1]
	if d.Type() != "init_declarator" {
		return false, nil
	}
	o := declName(d.ChildByFieldName("declarator"), t.u)
	start, err := t.expr(d.ChildByFieldName("value"))
	if err != nil {
		return false, nil
	}
	u := strings.Join(strings.Fields(t.u.text(upd)), "")
	if u != o+">>=1" && u != o+"/=2" && u != o+"="+o+"/2" && u != o+"="+o+">>1" || strings.Join(strings.Fields(t.u.text(cond)), "") != o+">0" {
		return false, nil
	}
	v, fn, arg, lane, off := mm[1], mm[3], mm[4], mm[6], mm[7]
	if fn != "" && arg != v || lane != v || off != o {
		return false, nil
	}
	if c, ok := start.poly.constant(); !ok || m.T > 32 || c != m.T/2 || m.T&(m.T-1) != 0 {
		return true, refuse(CodeUnsupported, "a shuffle loop from %s over rows of %d threads (a full-warp reduction starts at half a warp of at most 32)", oneLine(t.u.text(d.ChildByFieldName("value"))), m.T)
	}
	op := "sum"
	switch fn {
	case "fmaxf", "fmax", "max":
		op = "fmax"
	case "fminf", "fmin", "min":
		op = "fmin"
	}
	cur, ok := t.env.lookup(v)
	if !ok || cur.acc == nil && cur.sp != spThread {
		return true, refuse(CodeUnsupported, "the shuffle loop reduces %s, which is not a per-thread partial", v)
	}
	out, err := m.reduceThreads(t, cur, op, mm[5] == "down")
	if err != nil {
		return true, err
	}
	t.env.set(v, out)
	return true, nil
}

// rowGuard takes a leading `if (row >= E) return;` (row the block's row,
// E uniform) as the row count: the draft computes every row of the grid
// and keeps the first E (generate checks that each output has E rows).
func (m *rowMode) rowGuard(t *tr, n *ts.Node) (bool, error) {
	if t.depth > 0 || m.rowBound != nil || len(m.outs) > 0 || n.ChildByFieldName("alternative") != nil || !isTrue(t.path) || !isTrue(t.alive) {
		return false, nil
	}
	cons := n.ChildByFieldName("consequence")
	if cons.Type() == "compound_statement" && len(ts.Children(cons)) == 1 {
		cons = ts.Children(cons)[0]
	}
	c := strip(n.ChildByFieldName("condition"))
	if cons.Type() != "return_statement" || len(ts.Children(cons)) != 0 || c.Type() != "binary_expression" || t.u.text(c.ChildByFieldName("operator")) != ">=" {
		return false, nil
	}
	saved := len(t.lines)
	l, err1 := t.expr(c.ChildByFieldName("left"))
	r, err2 := t.expr(c.ChildByFieldName("right"))
	if err1 != nil || err2 != nil || !m.rowPoly(l.poly).equal(pvar("b")) || r.k != kUniform || r.poly == nil {
		t.lines = t.lines[:saved]
		return false, nil
	}
	if _, ok := polyPy(r.poly); !ok {
		t.lines = t.lines[:saved]
		return false, nil
	}
	m.rowBound = r.poly
	return true, nil
}

// accumulate reads "acc += e", "acc = acc + e", "acc = fmaxf(acc, e)" (and
// fminf/max/min) inside a row loop.
func (m *rowMode) accumulate(t *tr, name, op string, rhs *ts.Node) error {
	old, _ := t.env.lookup(name)
	if old.acc != nil {
		return refuse(CodeUnsupported, "%s accumulates twice in one row loop", name)
	}
	if old.sp != spUniform {
		return refuse(CodeUnsupported, "accumulator %s does not start uniform", name)
	}
	var rop string
	var e *ts.Node
	rhs = strip(rhs)
	switch {
	case op == "+=":
		rop, e = "sum", rhs
	case op == "=" && rhs.Type() == "binary_expression" && t.u.text(rhs.ChildByFieldName("operator")) == "+":
		l, r := strip(rhs.ChildByFieldName("left")), strip(rhs.ChildByFieldName("right"))
		switch name {
		case t.u.text(l):
			rop, e = "sum", r
		case t.u.text(r):
			rop, e = "sum", l
		}
	case op == "=" && rhs.Type() == "call_expression":
		fn := t.u.text(rhs.ChildByFieldName("function"))
		args := ts.Children(rhs.ChildByFieldName("arguments"))
		switch fn {
		case "fmaxf", "fmax", "max", "std::max":
			rop = "fmax"
		case "fminf", "fmin", "min", "std::min":
			rop = "fmin"
		}
		if rop != "" && len(args) == 2 {
			switch name {
			case t.u.text(strip(args[0])):
				e = args[1]
			case t.u.text(strip(args[1])):
				e = args[0]
			}
		}
	}
	if rop == "" || e == nil {
		return refuse(CodeUnsupported, "%s is updated in a row loop in a way that is not a sum, max or min", name)
	}
	if !isFloat(old.ct) {
		return refuse(CodeUnsupported, "integer accumulator %s (integer reductions are not supported by TPU kernels)", name)
	}
	ev, err := t.expr(e)
	if err != nil {
		return err
	}
	if err := mixable(ev); err != nil {
		return err
	}
	ident := map[string]string{"sum": "jnp.float32(0.0)", "fmax": "jnp.float32(-jnp.inf)", "fmin": "jnp.float32(jnp.inf)"}[rop]
	mask := t.path
	row := val{py: "jnp.where(" + mask.py + ", " + conv(ev, "float") + ", " + ident + ")", ct: "float", k: kData, sp: spRow}
	if isTrue(mask) {
		row.py = "jnp.broadcast_to(" + conv(ev, "float") + ", (BR, LP))"
	}
	t.env.set(name, val{py: "None", ct: old.ct, k: kData, sp: spThread, acc: &accum{op: rop, row: row, init: old}})
	return nil
}

// rowLoop: for (int j = threadIdx.x; j < L; j += blockDim.x) body.
func (m *rowMode) rowLoop(t *tr, n *ts.Node) (bool, error) {
	init, cond, upd := n.ChildByFieldName("initializer"), strip(n.ChildByFieldName("condition")), strip(n.ChildByFieldName("update"))
	if init == nil || cond == nil || upd == nil || init.Type() != "declaration" {
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
	if !iv.poly.equal(pvar("t")) {
		return false, nil
	}
	if upd.Type() != "assignment_expression" || t.u.text(upd.ChildByFieldName("operator")) != "+=" || t.u.text(upd.ChildByFieldName("left")) != name {
		return true, refuse(CodeUnsupported, "row loop %s does not step by the block size", name)
	}
	st, err := t.expr(upd.ChildByFieldName("right"))
	if err != nil {
		return true, err
	}
	if c, ok := st.poly.constant(); !ok || c != m.T {
		return true, refuse(CodeUnsupported, "row loop %s does not step by the block size", name)
	}
	if cond.Type() != "binary_expression" || t.u.text(cond.ChildByFieldName("operator")) != "<" || t.u.text(strip(cond.ChildByFieldName("left"))) != name {
		return true, refuse(CodeUnsupported, "row loop %s has no plain bound", name)
	}
	L, err := t.expr(cond.ChildByFieldName("right"))
	if err != nil {
		return true, err
	}
	if L.k != kUniform || L.poly == nil {
		return true, refuse(CodeUnsupported, "row loop bound is not uniform")
	}
	if m.L == nil {
		m.L = &L
	} else if !m.L.poly.equal(L.poly) {
		return true, refuse(CodeUnsupported, "row loops with different bounds")
	}
	if m.inLoop > 0 || !isTrue(t.path) || m.elected {
		return true, refuse(CodeUnsupported, "nested or conditional row loop")
	}
	savedPath := t.path
	t.env.push()
	m.inLoop = len(t.env.scopes) - 1
	m.jmask = "jm"
	t.path = val{py: "jm", ct: "bool", k: kIndex, sp: spRow}
	t.env.declare(name, val{py: "jj", ct: "int", k: kIndex, sp: spRow, poly: pvar("j")})
	err = t.block(n.ChildByFieldName("body"))
	t.env.pop()
	m.inLoop = 0
	t.path = savedPath
	return true, err
}

// treeLoop: for (s = T/2; s > 0; s >>= 1) { if (tid < s) A[tid] op= A[tid + s]; __syncthreads(); }
func (m *rowMode) treeLoop(t *tr, n *ts.Node) (bool, error) {
	init, cond, upd := n.ChildByFieldName("initializer"), strip(n.ChildByFieldName("condition")), strip(n.ChildByFieldName("update"))
	if init == nil || cond == nil || upd == nil || init.Type() != "declaration" {
		return false, nil
	}
	u := strings.Join(strings.Fields(t.u.text(upd)), "")
	var name string
	var start val
	for _, d := range ts.Children(init) {
		if d.Type() == "init_declarator" {
			name = declName(d.ChildByFieldName("declarator"), t.u)
			v, err := t.expr(d.ChildByFieldName("value"))
			if err != nil {
				return false, nil
			}
			start = v
		}
	}
	if u != name+">>=1" && u != name+"/=2" && u != name+"="+name+"/2" && u != name+"="+name+">>1" {
		return false, nil
	}
	if c, ok := start.poly.constant(); !ok || c != m.T/2 || m.T&(m.T-1) != 0 {
		return true, refuse(CodeUnsupported, "tree reduction loop does not start at half the (power-of-two) block size")
	}
	if strings.Join(strings.Fields(t.u.text(cond)), "") != name+">0" {
		return true, refuse(CodeUnsupported, "tree reduction loop bound")
	}
	var stmts []*ts.Node
	var flatten func(x *ts.Node)
	flatten = func(x *ts.Node) {
		if x.Type() == "compound_statement" {
			for _, c := range ts.Children(x) {
				flatten(c)
			}
			return
		}
		if x.Type() == "comment" {
			return
		}
		if x.Type() == "expression_statement" && strings.HasPrefix(strings.TrimSpace(t.u.text(x)), "__syncthreads") {
			return
		}
		stmts = append(stmts, x)
	}
	flatten(n.ChildByFieldName("body"))
	if len(stmts) != 1 || stmts[0].Type() != "if_statement" || stmts[0].ChildByFieldName("alternative") != nil {
		return true, refuse(CodeUnsupported, "tree reduction loop body is not one guarded update")
	}
	t.env.push()
	defer t.env.pop()
	t.env.declare(name, val{py: "s_tree", ct: "int", k: kUniform, poly: pvar("s")})
	g := strip(stmts[0].ChildByFieldName("condition"))
	if g.Type() != "binary_expression" || t.u.text(g.ChildByFieldName("operator")) != "<" {
		return true, refuse(CodeUnsupported, "tree reduction guard")
	}
	gl, err1 := t.expr(g.ChildByFieldName("left"))
	gr, err2 := t.expr(g.ChildByFieldName("right"))
	if err1 != nil || err2 != nil || !gl.poly.equal(pvar("t")) || !gr.poly.equal(pvar("s")) {
		return true, refuse(CodeUnsupported, "tree reduction guard is not threadIdx < stride")
	}
	ifn := stmts[0]
	stmts = nil
	flatten(ifn.ChildByFieldName("consequence"))
	if len(stmts) != 1 || stmts[0].Type() != "expression_statement" {
		return true, refuse(CodeUnsupported, "tree reduction update")
	}
	a := strip(ts.Children(stmts[0])[0])
	if a.Type() != "assignment_expression" {
		return true, refuse(CodeUnsupported, "tree reduction update")
	}
	lhs := strip(a.ChildByFieldName("left"))
	if lhs.Type() != "subscript_expression" {
		return true, refuse(CodeUnsupported, "tree reduction update")
	}
	base, li, err := t.address(lhs)
	if err != nil || !base.ptr.shared || !li.poly.equal(pvar("t")) {
		return true, refuse(CodeUnsupported, "tree reduction does not update the thread's shared slot")
	}
	arr := base.ptr.base
	isOther := func(x *ts.Node) bool {
		x = strip(x)
		if x.Type() != "subscript_expression" {
			return false
		}
		b, i, err := t.address(x)
		return err == nil && b.ptr.base == arr && i.poly.equal(pvar("t").add(pvar("s"), 1))
	}
	isSelf := func(x *ts.Node) bool {
		x = strip(x)
		if x.Type() != "subscript_expression" {
			return false
		}
		b, i, err := t.address(x)
		return err == nil && b.ptr.base == arr && i.poly.equal(pvar("t"))
	}
	op := ""
	rhs := strip(a.ChildByFieldName("right"))
	switch aop := t.u.text(a.ChildByFieldName("operator")); {
	case aop == "+=" && isOther(rhs):
		op = "sum"
	case aop == "=" && rhs.Type() == "binary_expression" && t.u.text(rhs.ChildByFieldName("operator")) == "+" &&
		(isSelf(rhs.ChildByFieldName("left")) && isOther(rhs.ChildByFieldName("right")) || isOther(rhs.ChildByFieldName("left")) && isSelf(rhs.ChildByFieldName("right"))):
		op = "sum"
	case aop == "=" && rhs.Type() == "call_expression":
		fn := t.u.text(rhs.ChildByFieldName("function"))
		args := ts.Children(rhs.ChildByFieldName("arguments"))
		if len(args) == 2 && (isSelf(args[0]) && isOther(args[1]) || isOther(args[0]) && isSelf(args[1])) {
			switch fn {
			case "fmaxf", "fmax", "max":
				op = "fmax"
			case "fminf", "fmin", "min":
				op = "fmin"
			}
		}
	}
	if op == "" {
		return true, refuse(CodeUnsupported, "tree reduction update is not a sum, max or min of two slots")
	}
	sv, ok := m.shared[arr]
	if !ok || sv.sp != spThread {
		return true, refuse(CodeUnsupported, "tree reduction over shared %s, which does not hold one value per thread", arr)
	}
	m.reduced[arr] = op
	return true, nil
}

func (m *rowMode) generate(t *tr, k *kernels.Kernel) (string, error) {
	if len(m.outs) == 0 {
		return "", refuse(CodeUnsupported, "the kernel writes no output")
	}
	for _, p := range t.outputParams() {
		found := false
		for _, o := range m.outs {
			found = found || o.param == p.Name
		}
		if !found {
			return "", refuse(CodeUnsupported, "output %s is never written", p.Name)
		}
	}
	if err := m.checkRowBound(t); err != nil {
		return "", err
	}
	inPlace := m.inPlace(t)
	var refs []string
	for _, v := range m.views {
		refs = append(refs, v.name+"_ref")
	}
	for _, o := range m.outs {
		refs = append(refs, o.name+"_ref")
	}
	Lpy := "1"
	if m.L != nil {
		Lpy = m.L.py
	}
	var body []string
	w := func(format string, a ...any) { body = append(body, fmt.Sprintf(format, a...)) }
	w("    BR = %s_ref.shape[0]", m.outs[0].name)
	w("    B = pl.program_id(0) * BR + lax.broadcasted_iota(jnp.int32, (BR, 1), 0)")
	w("    tid = lax.broadcasted_iota(jnp.int32, (BR, %d), 1)", m.T)
	w("    jj = lax.broadcasted_iota(jnp.int32, (BR, LP), 1)")
	w("    jm = jj < %s", Lpy)
	lanes := m.laneRowViews(t, inPlace)
	for _, line := range t.lines {
		w("    %s", laneReads(line, lanes))
	}
	for _, o := range m.outs {
		if o.blk == "" {
			return "", refuse(CodeUnsupported, "output %s is not written", o.param)
		}
		v := t.storeBlock(o.name+"_ref", val{py: o.blk, ct: "float", k: kData}, t.params[o.param])
		if m.rowValue(o) {
			// (BR, 1) values into a (BR, 1) or a lane-dense (1, BR) block
			if callArg(v, "_f2h") == v {
				v = "(" + v + ")"
			}
			v += ".reshape(" + o.name + "_ref.shape)"
		}
		w("    %s_ref[...] = %s", o.name, v)
	}
	body = pruneDead(body)
	kwNames := append(t.uniformNames(nil), "LP")
	for _, o := range m.outs {
		kwNames = append(kwNames, o.name+"_cols")
	}
	def, kw := kernelDef(refs, body, kwNames)
	kern := append([]string{def}, body...)

	var wrap []string
	ww := func(format string, a ...any) { wrap = append(wrap, fmt.Sprintf(format, a...)) }
	t.writeArgs(ww)
	switch {
	case m.rowBound != nil:
		// the rows the guard keeps; the grid must reach them all
		e, _ := polyPy(m.rowBound)
		ww("    R = %s", e)
		ww("    if gd_x * %d < R:", m.Ry)
		ww("        raise ValueError(\"the launch covers fewer rows than the kernel's row guard keeps\")")
	case m.Ry > 1:
		ww("    R = gd_x * %d", m.Ry)
	default:
		ww("    R = gd_x")
	}
	ww("    L = %s", Lpy)
	outs := t.outputParams()
	ww("    if R <= 0:")
	ww("        return {%s}", t.emptyResult(outs))
	if inPlace {
		ww("    LP = L")
	} else {
		ww("    LP = _round_up(max(L, 1), 128)")
	}
	var widths []string
	for _, v := range m.views {
		if inPlace {
			widths = append(widths, v.spy)
		} else {
			widths = append(widths, "_round_up(max("+v.spy+", 1), 128)")
		}
	}
	for _, o := range m.outs {
		switch {
		case m.L != nil && o.S.equal(m.L.poly):
			ww("    %s_cols = LP", o.name)
		case inPlace:
			ww("    %s_cols = %s", o.name, o.spy)
		default:
			ww("    %s_cols = 1 if %s == 1 else _round_up(max(%s, 1), 128)", o.name, o.spy, o.spy)
		}
		widths = append(widths, o.name+"_cols")
	}
	sub := t.sublanes()
	ww("    width = max([LP, %d, %s])", m.T, strings.Join(widths, ", "))
	ww("    BR = max(%d, min(256, (1 << 19) // (width * %d)) // %d * %d)", sub, len(m.views)+len(m.outs)+1, sub, sub)
	if inPlace {
		ww("    BR = min(BR, R)")
	} else {
		ww("    BR = min(BR, _round_up(R, %d))", sub)
	}
	dense := false
	for _, o := range m.outs {
		dense = dense || m.rowValue(o)
	}
	if dense {
		// one value per row: lane-dense (1, BR) blocks when BR can be a
		// multiple of 128 (or one block holds every row), not (BR, 1) blocks
		// whose every value fills a 128-lane tile row
		ww("    dense = R <= BR or BR >= 128")
		ww("    if R > BR and dense:")
		ww("        BR = BR // 128 * 128")
	}
	if !inPlace {
		ww("    RP = _round_up(R, BR)")
	}
	var ins, inSpecs []string
	for _, v := range m.views {
		switch {
		case len(v.S) == 0 && inPlace:
			ins = append(ins, t.kernelInput(t.params[v.param], fmt.Sprintf("p_%s.reshape(1, L)", v.param)))
			inSpecs = append(inSpecs, "pl.BlockSpec((1, LP), lambda i: (0, 0))")
		case len(v.S) == 0:
			ins = append(ins, t.kernelInput(t.params[v.param], fmt.Sprintf("_rows(p_%s, 1, L, LP, 1)", v.param)))
			inSpecs = append(inSpecs, "pl.BlockSpec((1, LP), lambda i: (0, 0))")
		case inPlace:
			in := "p_" + v.param
			if len(t.params[v.param].Shape) != 2 {
				in += fmt.Sprintf(".reshape(R, %s)", v.spy)
			}
			ins = append(ins, t.kernelInput(t.params[v.param], in))
			inSpecs = append(inSpecs, fmt.Sprintf("pl.BlockSpec((BR, %s), lambda i: (i, 0))", v.spy))
		case lanes[v.name] > 0:
			ins = append(ins, t.kernelInput(t.params[v.param], fmt.Sprintf("_lane_rows(p_%s, R * %s, RP * %s)", v.param, v.spy, v.spy)))
			inSpecs = append(inSpecs, fmt.Sprintf("pl.BlockSpec((BR * %d, 128), lambda i: (i, 0))", lanes[v.name]))
		default:
			ww("    %s_cols = _round_up(max(%s, 1), 128)", v.name, v.spy)
			ins = append(ins, t.kernelInput(t.params[v.param], fmt.Sprintf("_rows(p_%s, R, %s, %s_cols, RP)", v.param, v.spy, v.name)))
			inSpecs = append(inSpecs, fmt.Sprintf("pl.BlockSpec((BR, %s_cols), lambda i: (i, 0))", v.name))
		}
	}
	rows := "RP"
	grid := "(RP // BR,)"
	if inPlace {
		rows, grid = "R", "(pl.cdiv(R, BR),)"
	}
	var ospecs, oshapes []string
	for _, o := range m.outs {
		if m.rowValue(o) {
			ospecs = append(ospecs, "pl.BlockSpec((1, BR), lambda i: (0, i)) if dense else pl.BlockSpec((BR, 1), lambda i: (i, 0))")
			oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct((1, %s) if dense else (%s, 1), %s)", rows, rows, t.blockType(t.params[o.param])))
			continue
		}
		ospecs = append(ospecs, fmt.Sprintf("pl.BlockSpec((BR, %s_cols), lambda i: (i, 0))", o.name))
		oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct((%s, %s_cols), %s)", rows, o.name, t.blockType(t.params[o.param])))
	}
	ww("    outs = pl.pallas_call(")
	ww("        %s,", partialKernel(kw))
	ww("        grid=%s,", grid)
	ww("        in_specs=[%s],", strings.Join(inSpecs, ", "))
	ww("        out_specs=[%s],", strings.Join(ospecs, ", "))
	ww("        out_shape=[%s],", strings.Join(oshapes, ", "))
	ww("        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",)%s),", inputFusion(ins))
	ww("        interpret=interpret,")
	ww("    )(%s)", strings.Join(ins, ", "))
	var res []string
	for i, o := range m.outs {
		p := t.params[o.param]
		shape := t.shapePy(p)
		if inPlace {
			r := t.kernelOutput(p, fmt.Sprintf("outs[%d]", i)) + ".reshape(" + shape + ")"
			if !t.bitsHalf(p) && blockDType(p) != dtypePy(p.DType) {
				r += ".astype(" + dtypePy(p.DType) + ")"
			}
			res = append(res, fmt.Sprintf("%q: %s", o.param, r))
			continue
		}
		if m.rowValue(o) {
			ww("    r_%s = _row_values(%s, R, %s, %s)", o.param, t.kernelOutput(p, fmt.Sprintf("outs[%d]", i)), shape, dtypePy(p.DType))
		} else {
			ww("    r_%s = _unrows(%s, R, %s, %s, %s)", o.param, t.kernelOutput(p, fmt.Sprintf("outs[%d]", i)), o.spy, shape, dtypePy(p.DType))
		}
		res = append(res, fmt.Sprintf("%q: r_%s", o.param, o.param))
	}
	ww("    return {%s}", strings.Join(res, ", "))
	return renderDraft(t, m.names(t), kern, wrap), nil
}

// rowValue reports whether output o holds one value per row (stride 1,
// its block one column wide).
func (m *rowMode) rowValue(o *rowOut) bool {
	c, ok := o.S.constant()
	return ok && c == 1 && (m.L == nil || !o.S.equal(m.L.poly))
}

// laneRowViews are the row views (name -> 128-lane rows per block row) of
// a 1-D array whose row stride is a constant multiple of 128, read only in
// 128-aligned column ranges: such a view comes in as the padded array's own
// (n / 128, 128) tiles (a bitcast, the pad fused into the kernel's input),
// each block row being stride / 128 consecutive tile rows, rather than as an
// XLA relayout to (rows, stride).
func (m *rowMode) laneRowViews(t *tr, inPlace bool) map[string]int64 {
	out := map[string]int64{}
	if inPlace {
		return out
	}
	for _, v := range m.views {
		sc, ok := v.S.constant()
		if len(v.S) == 0 || !ok || sc <= 0 || sc%128 != 0 || len(t.params[v.param].Shape) != 1 {
			continue
		}
		aligned := true
		for _, line := range t.lines {
			for _, i := range reRefUse.FindAllStringIndex(line, -1) {
				use := line[i[0]:i[1]]
				if !strings.HasPrefix(use, v.name+"_ref[") {
					continue
				}
				mm := reColRange.FindStringSubmatch(use)
				if mm == nil {
					aligned = false
					continue
				}
				a, _ := strconv.ParseInt(mm[2], 10, 64)
				b, _ := strconv.ParseInt(mm[3], 10, 64)
				aligned = aligned && a%128 == 0 && b > a && (b-a)%128 == 0
			}
		}
		if aligned {
			out[v.name] = sc / 128
		}
	}
	return out
}

var reRefUse = regexp.MustCompile(`\bvw\d+_ref\[[^\]]*\]`)

var reColRange = regexp.MustCompile(`^(vw\d+)_ref\[:, (\d+):(\d+)\]$`)

// laneReads rewrites a line's reads of lane-row views (laneRowViews) as
// _lanes calls.
func laneReads(line string, lanes map[string]int64) string {
	if len(lanes) == 0 {
		return line
	}
	return reRefUse.ReplaceAllStringFunc(line, func(use string) string {
		mm := reColRange.FindStringSubmatch(use)
		if mm == nil || lanes[mm[1]] == 0 {
			return use
		}
		a, _ := strconv.ParseInt(mm[2], 10, 64)
		b, _ := strconv.ParseInt(mm[3], 10, 64)
		return fmt.Sprintf("_lanes(%s_ref, %d, %d, %d)", mm[1], a, b-a, lanes[mm[1]])
	})
}

// inPlace reports whether every row view is the parameter's own rows (its
// last dimension the row length, one row per block) and every output a row
// or one value per row: the blocks then cover the arrays as they are, the
// last one partial, with no padded copies.
func (m *rowMode) inPlace(t *tr) bool {
	if m.L == nil {
		return false
	}
	grid, err := kernels.ParseExpr(t.spec.Launch.Grid[0])
	if err != nil {
		return false
	}
	R := exprPoly(grid).mul(pconst(m.Ry))
	if m.rowBound != nil {
		R = m.rowBound
	}
	if R == nil {
		return false
	}
	lastIs := func(p *kernels.Param, S poly) bool {
		if len(p.Shape) == 0 {
			return false
		}
		e, err := kernels.ParseExpr(p.Shape[len(p.Shape)-1])
		return err == nil && exprPoly(e).equal(S)
	}
	for _, v := range m.views {
		p := t.params[v.param]
		if len(v.S) == 0 {
			if !paramSize(p).equal(m.L.poly) {
				return false
			}
			continue
		}
		if !v.S.equal(m.L.poly) || !lastIs(p, v.S) || !paramSize(p).equal(R.mul(v.S)) {
			return false
		}
	}
	for _, o := range m.outs {
		p := t.params[o.param]
		one := o.S.equal(pconst(1))
		if !one && (!o.S.equal(m.L.poly) || !lastIs(p, o.S)) || !paramSize(p).equal(R.mul(o.S)) {
			return false
		}
	}
	return true
}

// checkRowBound: rows past a `row >= E` guard are computed by the draft
// and dropped, which is exact only when each output holds E rows.
func (m *rowMode) checkRowBound(t *tr) error {
	if m.rowBound == nil {
		return nil
	}
	for _, o := range m.outs {
		if !paramSize(t.params[o.param]).equal(m.rowBound.mul(o.S)) {
			return refuse(CodeUnsupported, "%s does not hold exactly the rows the guard keeps", o.param)
		}
	}
	return nil
}

// names maps the row mode's placeholders to readable names.
func (m *rowMode) names(t *tr) *renamer {
	nm := t.baseNames()
	for from, to := range map[string]string{"B": "row", "jj": "col", "jm": "in_row", "BR": "block_rows", "LP": "row_len", "R": "n_rows", "L": "length", "RP": "rows_padded"} {
		nm.add(from, to)
	}
	loaded := map[string]bool{}
	for _, v := range m.views {
		n := v.param
		if loaded[v.param] {
			n += "_rows"
		}
		loaded[v.param] = true
		nm.add(v.name+"_ref", n+"_ref")
		nm.add(v.name+"_cols", n+"_cols")
	}
	for _, o := range m.outs {
		n := o.param
		if loaded[o.param] {
			n += "_out"
		}
		nm.add(o.name+"_ref", n+"_ref")
		nm.add(o.name+"_cols", n+"_cols")
	}
	return nm
}
