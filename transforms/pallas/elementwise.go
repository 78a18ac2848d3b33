package pallas

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
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
	// inStride is set while a grid-stride loop's body is translated;
	// strideMoved names the pointer parameters moved there (see movePointer).
	inStride    bool
	strideMoved []string
}

type ewAccess struct {
	name  string
	param string
	idx   val
	mask  val
	value val // stores: the value written (in the element's type)
	// loops are the runtime loops (outermost first) whose iteration the
	// address reads: the wrapper gathers the load once per iteration.
	loops []*rtLoop
	// gather marks a load at a data-dependent index (a gather by value):
	// at is that index rebuilt from the loads before it (expandDefs), for
	// the wrapper, where XLA gathers the elements (see gatherLoad).
	gather bool
	at     string
	// prior marks a slot store's read of the elements' prior content
	// (slotStore): the kernel reads them before it writes any.
	prior bool
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
	if v, pinned := t.pins[name]; pinned {
		// drafted for one value of a bool parameter (splitDraft)
		if v {
			return val{py: pyTrue, ct: "bool", k: kUniform, poly: pconst(1)}, true, nil
		}
		return val{py: "False", ct: "bool", k: kUniform, poly: pconst(0)}, true, nil
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
	if t.halfMath && p.DType == "float16" {
		ct = "half"
	}
	v := val{py: "p_" + name, ct: ct, k: kUniform, poly: pparam(name)}
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

// elemType is the translator's type of p's elements: a float16 array
// holds halves (half arithmetic, see halfOp) where the mode rounds them.
func (t *tr) elemType(p *kernels.Param) (string, error) {
	ct, err := elemCT(p)
	if err == nil && t.halfMath && p.DType == "float16" {
		ct = "half"
	}
	return ct, err
}

func elemCT(p *kernels.Param) (string, error) {
	if p.DType == "float64" {
		return "", refuse(CodeDType, "%s is float64: TPU kernels have no float64", p.Name)
	}
	return scalarCT(p)
}

func (m *ewMode) ident(t *tr, name string) (val, bool, error) { return paramVal(t, name) }

// saveState snapshots the recorded accesses (a loop is tried unrolled first).
func (m *ewMode) saveState() func() {
	loads, stores := slices.Clone(m.loads), slices.Clone(m.stores)
	stored, dims, extent := maps.Clone(m.stored), maps.Clone(m.dims), maps.Clone(m.extent)
	touched := m.touched
	return func() {
		m.loads, m.stores, m.stored, m.dims, m.extent, m.touched = loads, stores, stored, dims, extent, touched
	}
}

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
		return val{py: py, ct: "uint", k: kIndex, poly: popaque(py, kIndex)}, nil
	}
	return val{}, refuse(CodeUnsupported, "%s.%s", obj, fld)
}

func (m *ewMode) globalIdx(t *tr, dim string) (val, bool) {
	m.dims[dim] = true
	return val{py: "iv_" + dim, ct: "int", k: kIndex, poly: pvar(dim)}, true
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
		return m.gatherLoad(t, p, prm, idx)
	}
	if m.stored[p.base] {
		if m.loopStored(p.base) {
			return val{}, refuse(CodeLoop, "%s is read after a loop with a runtime trip count wrote it", p.base)
		}
		if st, ok := m.ownStore(t, p.base, idx); ok && exactStorage(prm) {
			return st.value, nil // the thread reads back what it wrote
		}
		return val{}, refuse(CodeUnsupported, "%s is read after this thread wrote it", p.base)
	}
	if prm.Role == "output" {
		return val{}, refuse(CodeUnsupported, "output %s is read before it is written", p.base)
	}
	ct, err := t.elemType(prm)
	if err != nil {
		return val{}, err
	}
	live := and(t.alive, t.path) // when the thread reads it (_vwin's windows)
	for i, l := range m.loads {
		if l.param == p.base && l.idx.py == idx.py {
			m.loads[i].mask = orMask(l.mask, live)
			return dataVal(l.name, ct), nil
		}
	}
	name := fmt.Sprintf("ld%d", len(m.loads))
	loops := t.loopsOf(idx)
	m.loads = append(m.loads, ewAccess{name: name, param: p.base, idx: idx, mask: live, loops: loops})
	if len(loops) > 0 {
		// this iteration's block of the per-iteration gather
		t.emit("%s", strings.TrimSpace(t.loadSliceLine(name, name+"_ref", loopIndexPy(loops), prm)))
	}
	return dataVal(name, ct), nil
}

// dataVal is a loaded value; an integer one is an atom of the index
// polynomials it enters (a store at out[(i + shift) * n + j] is seen as
// linear in the loaded shift: slotStore).
func dataVal(name, ct string) val {
	v := val{py: name, ct: ct, k: kData}
	if isInt(ct) && ct != "bool" {
		v.poly = popaque(name, kData)
	}
	return v
}

// gatherLoad is a load whose index depends on loaded data: points[idx[i]],
// softmax[i * classes + target[i]]. The element is gathered by XLA in the
// wrapper (a TPU kernel has no vector gather from HBM) and reaches the
// kernel as one more block input at the thread's position; the index is
// the kernel's expression rebuilt from the loads it reads. Only an input is
// gathered: an array the kernel writes would be read before or after its
// writes depending on the thread, which the wrapper cannot see. An index
// outside the array (undefined in CUDA) reads NaN, never a clamped
// neighbour (_take), and only floating-point data is gathered (an integer
// has no such poison value).
func (m *ewMode) gatherLoad(t *tr, p ptrv, prm *kernels.Param, idx val) (val, error) {
	if prm.Role != "input" || m.stored[p.base] {
		return val{}, refuse(CodeDataIndex, "%s is read at a data-dependent index and the kernel writes it", p.base)
	}
	if t.innerRuntime() != nil {
		return val{}, refuse(CodeDataIndex, "%s is read at a data-dependent index inside a loop with a runtime trip count", p.base)
	}
	ct, err := t.elemType(prm)
	if err != nil {
		return val{}, err
	}
	if !isFloat(ct) {
		return val{}, refuse(CodeDataIndex, "%s (integer data) is read at a data-dependent index", p.base)
	}
	at := t.expandDefs(idx.py)
	if len(at) > maxExpanded {
		return val{}, refuse(CodeDataIndex, "%s is read at a data-dependent index too large to rebuild outside the kernel", p.base)
	}
	for _, l := range m.loads {
		if len(l.loops) > 0 && slices.Contains(pyIdents(at), l.name) {
			return val{}, refuse(CodeDataIndex, "%s is read at an index computed from a loop's per-iteration reads", p.base)
		}
	}
	for _, l := range m.loads {
		if l.gather && l.param == p.base && l.at == at {
			return val{py: l.name, ct: ct, k: kData}, nil
		}
	}
	name := fmt.Sprintf("ld%d", len(m.loads))
	m.loads = append(m.loads, ewAccess{name: name, param: p.base, idx: idx, gather: true, at: at})
	return val{py: name, ct: ct, k: kData}, nil
}

func (m *ewMode) store(t *tr, p ptrv, idx val, v val) error {
	prm := t.params[p.base]
	if p.shared || prm == nil || (prm.Role != "output" && prm.Role != "inout") {
		return refuse(CodeUnsupported, "store to %s (not an output)", p.base)
	}
	if idx.k == kData {
		return m.slotStore(t, p, prm, idx, v)
	}
	if t.inRuntimeLoop() {
		return m.loopStore(t, p, prm, idx, v)
	}
	if m.loopStored(p.base) {
		return refuse(CodeLoop, "%s is written both inside and outside a loop with a runtime trip count", p.base)
	}
	mask := and(t.alive, t.path)
	ct, err := t.elemType(prm)
	if err != nil {
		return err
	}
	cv, err := t.castTo(v, ct)
	if err != nil {
		return err
	}
	if st := m.lastStore(p.base, idx); mask.k == kData || st != nil && st.mask.k == kData {
		return m.predicatedStore(t, prm, idx, cv, ct, mask, st)
	}
	if st, ok := m.ownStore(t, p.base, idx); ok {
		// the same element again under the same condition: the last
		// write wins, through the same block
		st.value = cv
		t.emit("%s[...] = %s", t.storeRef(st.name+"_ref", prm), t.storeBlock(st.name+"_ref", cv, prm))
		return nil
	}
	name := fmt.Sprintf("st%d", len(m.stores))
	m.stores = append(m.stores, ewAccess{name: name, param: p.base, idx: idx, mask: mask, value: cv})
	m.stored[p.base] = true
	m.touched = true
	t.emit("%s[...] = %s", t.storeRef(name+"_ref", prm), t.storeBlock(name+"_ref", cv, prm))
	return nil
}

// lastStore is the latest store to param at idx, under any condition.
func (m *ewMode) lastStore(param string, idx val) *ewAccess {
	for i := len(m.stores) - 1; i >= 0; i-- {
		if st := &m.stores[i]; st.param == param && st.idx.py == idx.py {
			return st
		}
	}
	return nil
}

// predicatedStore writes p[idx] = v under a data-dependent condition, a
// select the wrapper cannot scatter by: the element's block takes v where
// the condition holds and what the thread stored there before elsewhere,
// and the store's mask grows to the union of the conditions. When the
// branches of an if/else both write the element (mmcv's softmax focal
// loss: `if (label >= 0) out[i] = …; else out[i] = 0;`) the union is the
// enclosing condition again (orMask) and the store is an ordinary one;
// generate refuses a mask that stays data-dependent, where the element would
// keep the output's prior content.
func (m *ewMode) predicatedStore(t *tr, prm *kernels.Param, idx, cv val, ct string, mask val, st *ewAccess) error {
	if st == nil {
		cv = t.bind(cv, "v")
		name := fmt.Sprintf("st%d", len(m.stores))
		m.stores = append(m.stores, ewAccess{name: name, param: prm.Name, idx: idx, mask: mask, value: cv})
		m.stored[prm.Name] = true
		m.touched = true
		t.emit("%s[...] = %s", t.storeRef(name+"_ref", prm), t.storeBlock(name+"_ref", cv, prm))
		return nil
	}
	if mixable(mask, cv) != nil || mixable(mask, st.value) != nil {
		return refuse(CodeUnsupported, "%s is written under a data-dependent condition in another space", prm.Name)
	}
	nv := cv
	if !isTrue(mask) {
		nv = t.bind(where(mask, cv, st.value, ct), "v")
	}
	st.value, st.mask = nv, orMask(st.mask, mask)
	dropStoreLine(t, st.name+"_ref")
	t.emit("%s[...] = %s", t.storeRef(st.name+"_ref", prm), t.storeBlock(st.name+"_ref", nv, prm))
	return nil
}

// dropStoreLine removes the kernel's last whole-block write of ref: the
// write about to be emitted replaces it, and reads of the element use the
// stored value, never the ref.
func dropStoreLine(t *tr, ref string) {
	for i := len(t.lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(t.lines[i]); strings.HasPrefix(l, ref+"[...] = ") || strings.HasPrefix(l, "_f16_out("+ref+")[...] = ") {
			t.lines = slices.Delete(t.lines, i, i+1)
			return
		}
	}
}

// ownStore is the latest store to param when it wrote the element at idx
// under the condition the code is under now: a load there reads that value
// and a store there replaces it.
func (m *ewMode) ownStore(t *tr, param string, idx val) (*ewAccess, bool) {
	for i := len(m.stores) - 1; i >= 0; i-- {
		st := &m.stores[i]
		if st.param != param {
			continue
		}
		mask := and(t.alive, t.path)
		return st, st.idx.py == idx.py && st.mask.py == mask.py && st.mask.k == mask.k
	}
	return nil, false
}

// exactStorage: the element type holds a computed value exactly (a thread
// reading back its own half or bfloat16 store would see it rounded).
func exactStorage(p *kernels.Param) bool {
	switch p.DType {
	case "float32", "int32", "uint32", "bool":
		return true
	}
	return false
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
	if t.depth > 0 || !isTrue(t.path) || !isTrue(t.alive) || len(t.loops) > 0 {
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
		atoms := monomial(key)
		if coef != 1 || len(atoms) != 1 || atoms[0].kind != atomVar {
			return nil, false, nil
		}
		d := atoms[0].name
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
	if len(iv.poly) != 1 || iv.poly[varKey("x")] != 1 {
		return false, nil
	}
	if upd.Type() != "assignment_expression" || t.u.text(upd.ChildByFieldName("operator")) != "+=" || t.u.text(upd.ChildByFieldName("left")) != name {
		return false, nil
	}
	stride := strings.Join(strings.Fields(t.u.text(stripCasts(upd.ChildByFieldName("right"), t.u))), "")
	stride = strings.NewReplacer("(", "", ")", "").Replace(stride)
	if stride != "blockDim.x*gridDim.x" && stride != "gridDim.x*blockDim.x" && !m.isGridStride(t, upd.ChildByFieldName("right")) {
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
	m.inStride = true
	defer func() { m.inStride = false }()
	return true, t.block(n.ChildByFieldName("body"))
}

// movePointer accepts `p += offset` on a pointer parameter. The draft
// translates a grid-stride loop's body once per element, as the first
// iteration of a thread; a pointer moved inside that body is loop-carried in
// the CUDA code (a thread's second iteration moves it again, from where the
// first left it: mmcv's gather_points is only right because GET_BLOCKS(n)
// blocks give every thread one iteration). The translation is exact exactly
// when every thread runs at most one iteration, grid.x · block.x ≥ the
// loop's extent; rather than model the accumulation (which no caller
// relies on) the draft proves that per call: run() raises for a launch
// where some thread would run twice (runtimeGuards), and a spec whose
// constant launch does not cover its constant extent is refused here.
func (m *ewMode) movePointer(t *tr, name string) error {
	if m.inStride && !slices.Contains(m.strideMoved, name) {
		m.strideMoved = append(m.strideMoved, name)
	}
	return nil
}

// strideGuard is run()'s check that no thread runs a second iteration of
// the grid-stride loop whose body moves pointers (see movePointer), or a
// refusal when the spec's constant launch already says one would.
func (m *ewMode) strideGuard(t *tr, ext map[string]val) ([]string, error) {
	if len(m.strideMoved) == 0 {
		return nil, nil
	}
	g, b, e := launchVal(t, "grid", "x"), launchVal(t, "block", "x"), ext["x"]
	gc, ok1 := g.poly.constant()
	bc, ok2 := b.poly.constant()
	ec, ok3 := e.poly.constant()
	if ok1 && ok2 && ok3 && gc*bc < ec {
		return nil, refuse(CodeUnsupported, "%s is moved inside a grid-stride loop whose threads run several iterations "+
			"(grid.x·block.x = %d < %d): the moves accumulate across them", strings.Join(m.strideMoved, ", "), gc*bc, ec)
	}
	msg := "pointers move in the grid-stride loop: needs grid.x * block.x >= its extent"
	return []string{
		"    if gd_x * bd_x < E_x:",
		fmt.Sprintf("        raise ValueError(%q)", msg),
	}, nil
}

// isGridStride: the stride is the grid's thread count however it is
// spelled (a local such as `const int64_t stride = (int64_t)blockDim.x *
// gridDim.x`, casts, either order).
func (m *ewMode) isGridStride(t *tr, n *ts.Node) bool {
	saved := len(t.lines)
	defer func() { t.lines = t.lines[:saved] }()
	sv, err := t.expr(n)
	if err != nil || sv.k != kUniform || !isInt(sv.ct) {
		return false
	}
	bd, gd := launchVal(t, "block", "x"), launchVal(t, "grid", "x")
	if sv.poly != nil && bd.poly != nil && gd.poly != nil {
		return sv.poly.equal(bd.poly.mul(gd.poly))
	}
	want, err := t.binop("*", bd, gd)
	if err != nil {
		return false
	}
	other, err := t.binop("*", gd, bd)
	return err == nil && (unwrapInt(sv.py) == unwrapInt(want.py) || unwrapInt(sv.py) == unwrapInt(other.py))
}

// unwrapInt drops the integer conversions a C cast leaves around a
// uniform value's Python text.
func unwrapInt(py string) string {
	for {
		prev := py
		for _, f := range []string{"int(", "jnp.int32(", "jnp.uint32(", "jnp.int64(", "jnp.uint64("} {
			if strings.HasPrefix(py, f) && strings.HasSuffix(py, ")") {
				py = py[len(f) : len(py)-1]
			}
		}
		py = strings.ReplaceAll(py, " ", "")
		if strings.HasPrefix(py, "(") && strings.HasSuffix(py, ")") {
			py = py[1 : len(py)-1]
		}
		if py == prev {
			return py
		}
	}
}

// ---- code generation ----

// ewLayout is how an elementwise draft reaches its data.
type ewLayout struct {
	inPlace bool
	shape   []string         // the view's array shape (every access shares it) when in place
	bcast   map[int]bool     // loads (by index) of a row vector at the thread's column
	colv    map[int]bool     // loads (by index) of a column vector at the thread's row (target[i / cols])
	colOff  map[int]int64    // loads (by index) of column block g of a [rows, W*cols] array (gates[b, g*H + j])
	colW    map[string]int64 // W of each array read in column blocks
	// step is (stride, offset) of the row and column vector loads that read
	// every stride-th element from offset (box[(i % n) * 4 + 1]: one
	// coordinate of (n, 4) boxes); absent for stride 1
	step map[int][2]int64
}

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
	for _, p := range t.outputParams() {
		if !m.stored[p.Name] {
			return "", refuse(CodeUnsupported, "output %s is never written", p.Name)
		}
	}
	for _, st := range m.stores {
		if st.mask.k == kData {
			return "", refuse(CodeUnsupported, "%s is written under a data-dependent condition and otherwise keeps its "+
				"prior content, which a draft cannot select by a value computed in the kernel", st.param)
		}
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
	m.foldVectors(t, dims, ext)
	flat, size := pconst(0), pconst(1)
	for _, d := range dims {
		flat = flat.mul(ext[d].poly).add(pvar(d), 1)
		size = size.mul(ext[d].poly)
	}
	guard, err := m.strideGuard(t, ext)
	if err != nil {
		return "", err
	}
	guard = append(guard, m.periodLines(t, dims)...)
	lay := m.layout(t, flat, size, dims, ext)
	nm := m.names(t, dims)
	var kern, wrap []string
	if lay.inPlace {
		kern, wrap = m.inPlace(t, dims, ext, lay)
	} else {
		kern, wrap, err = m.padded(t, dims, ext, flat, size)
		if err != nil {
			return "", err
		}
		if vm, out, ok := m.gatherLoads(t, flat, size, dims); ok {
			// gathered in the kernel, the padded form kept for arrays too large for VMEM
			xla := renderDraft(t, nm, kern, insertBeforeDomain(wrap, guard))
			if vk, vw, win, ok := m.gatherInPlace(t, dims, ext, vm, out); ok {
				vmem := renderDraft(t, nm, vk, insertBeforeDomain(vw, guard))
				if win != nil { // and over windows of the arrays when they do not fit whole
					vmem += "\n\n" + renderRunWin(t, nm, insertBeforeDomain(win, guard))
				}
				if mod, ok := withXLAFallback(vmem, xla); ok {
					return mod, nil
				}
			}
			return xla, nil
		}
	}
	return renderDraft(t, nm, kern, insertBeforeDomain(wrap, guard)), nil
}

// insertBeforeDomain puts lines into run() where the extents are known,
// before the domain's size D is taken.
func insertBeforeDomain(wrap, lines []string) []string {
	if len(lines) == 0 {
		return wrap
	}
	for i, l := range wrap {
		if strings.HasPrefix(l, "    D = ") {
			return slices.Concat(wrap[:i], lines, wrap[i:])
		}
	}
	return append(lines, wrap...)
}

// layout picks in-place blocks when every access is the thread's own
// position in arrays of one shape (or, for a view of rank 2 or more, a row
// vector indexed by the column: a bias), each output written once: the
// kernel then reads each input once and writes each output once, straight
// from the arrays (partial edge blocks, no padding copies).
func (m *ewMode) layout(t *tr, flat, size poly, dims []string, ext map[string]val) ewLayout {
	var shape []string
	same := func(p *kernels.Param) bool {
		if shape == nil {
			shape = p.Shape
		}
		if len(p.Shape) != len(shape) || len(shape) == 0 {
			return false
		}
		for i := range shape {
			if strings.TrimSpace(shape[i]) != strings.TrimSpace(p.Shape[i]) {
				return false
			}
		}
		return paramSize(p).equal(size)
	}
	count := map[string]int{}
	for _, s := range m.stores {
		count[s.param]++
	}
	for _, s := range m.stores {
		if len(s.loops) > 0 || count[s.param] != 1 || !isTrue(s.mask) || !s.idx.poly.equal(flat) || !same(t.params[s.param]) {
			return ewLayout{}
		}
	}
	lay := ewLayout{inPlace: true, shape: shape, bcast: map[int]bool{}, colv: map[int]bool{}, colOff: map[int]int64{}, colW: map[string]int64{}, step: map[int][2]int64{}}
	for i, l := range m.loads {
		g, w := m.columnBlock(t, l, lay.shape, dims, ext)
		_, stride, off, _ := stridedAtom(l.idx.poly)
		if stride > 1 {
			lay.step[i] = [2]int64{stride, off}
		}
		switch {
		case len(l.loops) > 0, l.gather:
			return ewLayout{}
		case l.idx.poly.equal(flat) && same(t.params[l.param]):
		case m.columnIndexed(t, l, lay.shape, dims, ext):
			lay.bcast[i] = true
		case m.rowIndexed(t, l, lay.shape, dims):
			lay.colv[i] = true
		case g >= 0:
			lay.colOff[i], lay.colW[l.param] = g, w
		default:
			return ewLayout{}
		}
	}
	return lay
}

// columnIndexed reports whether load l reads a row vector, as long as the
// view's last dimension, at the thread's column: x[i_x] in a 2-D launch
// whose x extent is that dimension, or x[i % cols] in a 1-D one.
func (m *ewMode) columnIndexed(t *tr, l ewAccess, shape []string, dims []string, ext map[string]val) bool {
	if len(shape) < 2 {
		return false
	}
	e, err := kernels.ParseExpr(shape[len(shape)-1])
	if err != nil {
		return false
	}
	last := exprPoly(e)
	if last == nil {
		return false
	}
	if len(dims) >= 2 && dims[len(dims)-1] == "x" && ext["x"].poly.equal(last) && l.idx.poly.equal(pvar("x")) {
		return paramSize(t.params[l.param]).equal(last)
	}
	key, stride, _, ok := stridedAtom(l.idx.poly)
	if len(dims) != 1 || !ok || !paramSize(t.params[l.param]).equal(last.mul(pconst(stride))) {
		return false
	}
	mm := varyingMatch(reColRem, key)
	return mm != nil && t.namePoly(mm[1]).equal(last)
}

// stridedAtom reads p as stride * atom + offset with 0 <= offset < stride
// (an element of every stride-th group of a vector), ok false otherwise.
func stridedAtom(p poly) (key string, stride, offset int64, ok bool) {
	for k, c := range p {
		switch {
		case k == "":
			offset = c
		case key != "":
			return "", 0, 0, false
		default:
			key, stride = k, c
		}
	}
	if key == "" || stride < 1 || offset < 0 || offset >= stride {
		return "", 0, 0, false
	}
	return key, stride, offset, true
}

// columnBlock is (g, W) when load l reads column block g of a [rows, W*cols]
// array at the thread's (row, column) of a 2-D launch over (rows, cols):
// gates[b * 4H + g * H + j] beside [batch, H] states. Else g is -1.
func (m *ewMode) columnBlock(t *tr, l ewAccess, shape []string, dims []string, ext map[string]val) (g, w int64) {
	prm := t.params[l.param]
	if len(shape) != 2 || len(dims) != 2 || dims[0] != "y" || dims[1] != "x" || prm == nil || len(prm.Shape) != 2 || l.idx.poly == nil {
		return -1, 0
	}
	dimPoly := func(s string) poly {
		e, err := kernels.ParseExpr(s)
		if err != nil {
			return nil
		}
		return exprPoly(e)
	}
	rows, cols := dimPoly(shape[0]), dimPoly(shape[1])
	prows, pcols := dimPoly(prm.Shape[0]), dimPoly(prm.Shape[1])
	if rows == nil || cols == nil || prows == nil || pcols == nil || !prows.equal(rows) ||
		!cols.equal(ext["x"].poly) || !rows.equal(ext["y"].poly) {
		return -1, 0
	}
	for w := int64(2); w <= 8; w++ {
		if !cols.mul(pconst(w)).equal(pcols) {
			continue
		}
		for g := int64(0); g < w; g++ {
			want := pvar("y").mul(pcols).add(cols.mul(pconst(g)), 1).add(pvar("x"), 1)
			if l.idx.poly.equal(want) {
				return g, w
			}
		}
	}
	return -1, 0
}

// rowIndexed reports whether load l reads a column vector, as long as the
// view's rows, at the thread's row: x[i / cols] in a 1-D launch over a 2-D
// view whose last dimension is cols (a per-sample target beside per-class
// logits).
func (m *ewMode) rowIndexed(t *tr, l ewAccess, shape []string, dims []string) bool {
	key, stride, _, ok := stridedAtom(l.idx.poly)
	if len(shape) != 2 || len(dims) != 1 || !ok {
		return false
	}
	rows, err1 := kernels.ParseExpr(shape[0])
	cols, err2 := kernels.ParseExpr(shape[1])
	if err1 != nil || err2 != nil || exprPoly(rows) == nil || exprPoly(cols) == nil {
		return false
	}
	if !paramSize(t.params[l.param]).equal(exprPoly(rows).mul(pconst(stride))) {
		return false
	}
	mm := varyingMatch(reRowDiv, key)
	return mm != nil && t.namePoly(mm[1]).equal(exprPoly(cols))
}

// varyingMatch matches re against a monomial that is one varying
// sub-expression (the thread's index divided by or modulo a size), else nil.
func varyingMatch(re *regexp.Regexp, key string) []string {
	atoms := monomial(key)
	if len(atoms) != 1 || atoms[0].kind != atomVarying {
		return nil
	}
	return re.FindStringSubmatch(atoms[0].name)
}

var reRowDiv = regexp.MustCompile(`^_c_div\(iv_x, ([A-Za-z_][A-Za-z0-9_]*), jnp\.u?int32\)$`)

var reColRem = regexp.MustCompile(`^_c_rem\(iv_x, ([A-Za-z_][A-Za-z0-9_]*), jnp\.u?int32\)$`)

// namePoly is the size polynomial of a placeholder: s_<symbol>, or a size
// parameter p_<name> by its expression.
func (t *tr) namePoly(name string) poly {
	var src string
	switch {
	case strings.HasPrefix(name, "s_"):
		src = strings.TrimPrefix(name, "s_")
	case strings.HasPrefix(name, "p_"):
		p := t.params[strings.TrimPrefix(name, "p_")]
		if p == nil || p.Kind == "pointer" || p.Role != "size" {
			return nil
		}
		src = p.Expr
	default:
		return nil
	}
	e, err := kernels.ParseExpr(src)
	if err != nil {
		return nil
	}
	return exprPoly(e)
}

func paramSize(p *kernels.Param) poly {
	out := pconst(1)
	for _, s := range p.Shape {
		e, err := kernels.ParseExpr(s)
		if err != nil {
			return nil
		}
		out = out.mul(exprPoly(e))
	}
	return out
}

// names maps the translator's placeholders to readable names: parameters
// by their own names, the launch by what it is, loads by their parameter.
func (m *ewMode) names(t *tr, dims []string) *renamer {
	nm := t.baseNames()
	for _, d := range []string{"x", "y", "z"} {
		nm.add("iv_"+d, "i_"+d)
		nm.add("E_"+d, "extent_"+d)
	}
	loopNames(nm, t.nloops)
	for _, p := range [][3]string{{"SHAPE", "shape", "block_shape"}, {"ROW", "row", "block_row"}, {"COL", "col", "block_col"},
		{"VROWS", "rows", "view_rows"}, {"VCOLS", "cols", "view_cols"}, {"BROWS", "block_rows", "block_rows"},
		{"BCOLS", "block_cols", "block_cols"}, {"LANES", "lanes", "lanes"}, {"PROWS", "padded_rows", "padded_rows"},
		{"DP", "size", "padded_size"}, {"ADDR", "addresses", "window_addresses"}, {"TRANSP", "transposed", "view_transposed"},
		{"KROWS", "kernel_rows", "kernel_view_rows"}, {"KCOLS", "kernel_cols", "kernel_view_cols"}, {"PERROW", "per_row", "per_row_spec"},
		{"PERCOL", "per_col", "per_col_spec"}, {"MULT", "rows_mult", "block_rows_mult"}, {"OWN", "own_rows", "view_own_rows"},
		{"VLEAD", "lead", "view_lead"}, {"OMETA", "out_meta", "output_view_meta"}} {
		nm.addOr(p[0], p[1], p[2])
	}
	loaded := map[string]int{}
	for _, l := range m.loads {
		n := l.param
		if loaded[l.param] > 0 {
			n = fmt.Sprintf("%s_%d", l.param, loaded[l.param])
		}
		loaded[l.param]++
		v := nm.add(l.name, n)
		nm.add(l.name+"_ref", v+"_ref")
		nm.add(l.name+"_in", v+"_in")
		nm.add(l.name+"_offs", v+"_offs")
		nm.add(l.name+"_plane", v+"_plane")
		nm.add(l.name+"_layout", v+"_layout")
		nm.add(l.name+"_held", v+"_held")
		nm.add(l.name+"_meta", v+"_meta")
		nm.add(l.name+"_at", v+"_at")
	}
	stored := map[string]int{}
	for _, s := range m.stores {
		n := s.param
		if loaded[s.param] > 0 {
			n += "_out"
		}
		if stored[s.param] > 0 {
			n = fmt.Sprintf("%s_%d", n, stored[s.param])
		}
		stored[s.param]++
		nm.add(s.name+"_ref", n+"_ref")
	}
	// _run_win's (vwin.go), after the arrays' names, which they yield to
	for _, p := range [][3]string{{"WINS", "windows", "view_windows"}, {"WLIVE", "reads", "window_reads"}, {"WTABLE", "table", "window_table"},
		{"WBLOCKS", "blocks", "window_blocks"}, {"WSPECS", "window_specs", "window_in_specs"},
		{"WLEAD", "at_lead", "window_at_lead"}, {"WROW", "at_row", "window_at_row"}, {"WCOL", "at_col", "window_at_col"}} {
		nm.addOr(p[0], p[1], p[2])
	}
	return nm
}

// baseNames maps the uniform placeholders every mode shares.
func (t *tr) baseNames() *renamer {
	nm := newRenamer()
	for _, s := range t.spec.Symbols {
		nm.add("s_"+s, s)
	}
	for _, p := range t.spec.Params {
		if p.Kind == "pointer" {
			// arrays live in run() only; their loads take the same name in the kernel
			nm.to["p_"+p.Name] = p.Name
			continue
		}
		if p.Role == "size" && strings.TrimSpace(p.Expr) == p.Name && slices.Contains(t.spec.Symbols, p.Name) {
			// s_n = int(p_n): one name for both
			nm.to["p_"+p.Name] = nm.to["s_"+p.Name]
			continue
		}
		nm.add("p_"+p.Name, p.Name)
	}
	for _, d := range []string{"x", "y", "z"} {
		nm.add("bd_"+d, "block_dim_"+d)
		nm.add("gd_"+d, "grid_dim_"+d)
	}
	return nm
}

// kernelDef is the kernel's def line: its refs, then the uniform values the
// pruned body reads as keyword-only parameters.
func kernelDef(refs []string, body []string, uniforms []string) (string, []string) {
	var kw []string
	for _, u := range uniforms {
		if readsName(body, u) {
			kw = append(kw, u)
		}
	}
	params := strings.Join(refs, ", ")
	if len(kw) > 0 {
		params += ", *, " + strings.Join(kw, ", ")
	}
	return "def _kernel(" + params + "):", kw
}

// partialKernel is the kernel as pallas_call takes it: each keyword k
// given the wrapper's k, or an entry "k=value" as it is.
func partialKernel(kw []string) string {
	if len(kw) == 0 {
		return "_kernel"
	}
	var a []string
	for _, k := range kw {
		if strings.Contains(k, "=") {
			a = append(a, k)
		} else {
			a = append(a, k+"="+k)
		}
	}
	return "functools.partial(_kernel, " + strings.Join(a, ", ") + ")"
}

// loadLine reads a ref's block as the compute type.
func (t *tr) loadLine(name, ref string, p *kernels.Param) string {
	return t.loadSliceLine(name, ref, "...", p)
}

// loadSliceLine reads ref[index] as the compute type.
func (t *tr) loadSliceLine(name, ref, index string, p *kernels.Param) string {
	return "    " + name + " = " + t.readAs(ref, index, p)
}

// readAs is ref[index] as the compute type (float16 bits decoded).
func (t *tr) readAs(ref, index string, p *kernels.Param) string {
	ct := computeType(p)
	switch {
	case t.bitsHalf(p):
		return "_h2f(" + ref + "[" + index + "])"
	case blockDType(p) == ct:
		return ref + "[" + index + "]"
	}
	return ref + "[" + index + "].astype(" + ct + ")"
}

// bitsHalf: p is a float16 array the kernel reads and writes as its int16
// bits (halfBits).
func (t *tr) bitsHalf(p *kernels.Param) bool { return t.halfBits && p.DType == "float16" }

// blockType is the dtype of p's blocks in the kernel.
func (t *tr) blockType(p *kernels.Param) string {
	if t.bitsHalf(p) {
		return "jnp.int16"
	}
	return blockDType(p)
}

// storeBlock is v as the block a store through ref to p writes: float16
// bits encoded from the float32 value (a rounding _f16 around all of it is
// the encoder's own), else storeValue.
func (t *tr) storeBlock(ref string, v val, p *kernels.Param) string {
	if !t.bitsHalf(p) {
		return storeValue(ref, v, blockDType(p))
	}
	if v.k == kUniform {
		return "_f2h(jnp.full(" + ref + ".shape, " + v.py + ", jnp.float32))"
	}
	return "_f2h(" + callArg(callArg(v.py, "_f16"), "") + ")"
}

// storeRef is the ref a store to p writes through: a float16 output's int16
// view (_f16_out), else ref.
func (t *tr) storeRef(ref string, p *kernels.Param) string {
	if t.bitsHalf(p) {
		return "_f16_out(" + ref + ")"
	}
	return ref
}

// outBlockType is the dtype of output p's blocks in the forms whose kernel
// stores through storeRef: a float16 output's blocks are float16, so no XLA
// copy of an int16 result follows the kernel (int16 under interpret=True,
// _f16_block).
func (t *tr) outBlockType(p *kernels.Param) string {
	if t.bitsHalf(p) {
		return "_f16_block(interpret)"
	}
	return t.blockType(p)
}

// kernelInput is expr, the wrapper's array for p, as the kernel takes it:
// a float16 array as its bits.
func (t *tr) kernelInput(p *kernels.Param, expr string) string {
	if t.bitsHalf(p) {
		return "_f16_bits(" + expr + ")"
	}
	return expr
}

// kernelOutput is the wrapper's array for output block o of p.
func (t *tr) kernelOutput(p *kernels.Param, o string) string {
	if t.bitsHalf(p) {
		return "_bits_f16(" + o + ")"
	}
	return o
}

// callArg is the argument of s when s is one call fn(arg) (fn "": s is
// one parenthesised expression), else s.
func callArg(s, fn string) string {
	if !strings.HasPrefix(s, fn+"(") || !strings.HasSuffix(s, ")") {
		return s
	}
	depth := 0
	for i := len(fn); i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(s)-1 {
				return s // fn(...) is only a prefix
			}
		}
	}
	return s[len(fn)+1 : len(s)-1]
}

// inPlace is the kernel and wrapper over the arrays' own layout, in 2-D
// blocks of a view XLA makes without a copy: higher ranks as (rows, last
// dim), 1-D arrays as (rows, 128) (the (8, 128) tiles of that view are the
// 1-D array's own 1024-element tiles): rows = n / 128 when 128 divides n,
// else the array padded to whole 1024-element tiles, a pad XLA fuses into
// the kernel's input, the output's first n elements then a bitcast of its
// (rows, 128) result (v6e, n = 70001: bytes accessed 1.00x the layout
// minimum, where a (1, n) view needed an XLA copy back to (n,): 2.0x). The
// padded elements are computed and dropped. The last block of each axis
// may be partial (Pallas drops its out-of-range writes). 2-D blocks rather
// than 1-D ones also keep the kernel exportable for TPU on a host without
// one: Mosaic checks 1-D blocks against the tiling of the default device
// (jax's tpu_info), and jax_op's fake exports with the CPU as that device
// ("Unsupported TPU device kind: cpu").
func (m *ewMode) inPlace(t *tr, dims []string, ext map[string]val, lay ewLayout) (kern, wrap []string) {
	var refs []string
	colRef := map[string]string{} // an array read in column blocks: its one ref (whole rows)
	for i, l := range m.loads {
		if _, ok := lay.colOff[i]; ok {
			if colRef[l.param] != "" {
				continue
			}
			colRef[l.param] = l.name + "_ref"
		}
		refs = append(refs, l.name+"_ref")
	}
	for _, s := range m.stores {
		refs = append(refs, s.name+"_ref")
	}
	out0 := m.stores[0].name + "_ref"
	flip := transposable(t, lay)
	var body []string
	w := func(format string, a ...any) { body = append(body, fmt.Sprintf(format, a...)) }
	w("    SHAPE = %s.shape", out0)
	w("    ROW = pl.program_id(0) * SHAPE[0] + lax.broadcasted_iota(jnp.int32, SHAPE, 0)")
	w("    COL = pl.program_id(1) * SHAPE[1] + lax.broadcasted_iota(jnp.int32, SHAPE, 1)")
	if flip {
		w("    if TRANSP:  # blocks of the arrays' transposes: axis 0 runs over the columns")
		w("        ROW, COL = COL, ROW")
	}
	w("    d = ROW * VCOLS + COL")
	writeIndexVars(w, "    ", dims, ext)
	for i, l := range m.loads {
		if g, ok := lay.colOff[i]; ok {
			body = append(body, t.loadSliceLine(l.name, colRef[l.param], fmt.Sprintf(":, %d * VCOLS : %d * VCOLS", g, g+1), t.params[l.param]))
			continue
		}
		if lay.colv[i] || lay.bcast[i] {
			body = append(body, vectorLoad(t.loadLine(l.name, l.name+"_ref", t.params[l.param]), lay.colv[i], flip))
			continue
		}
		body = append(body, t.loadLine(l.name, l.name+"_ref", t.params[l.param]))
	}
	for _, line := range t.lines {
		w("    %s", line)
	}
	body = dropUnusedSwap(pruneDead(body))
	def, kw := kernelDef(refs, body, append(t.uniformNames(dims), "VCOLS", "TRANSP"))
	kern = append([]string{def}, body...)

	ww := func(format string, a ...any) { wrap = append(wrap, fmt.Sprintf(format, a...)) }
	t.writeDomain(ww, dims, ext)
	var shp []string
	for _, s := range lay.shape {
		shp = append(shp, exprPyString(s))
	}
	view := func(p string) string { return "p_" + p }
	if len(lay.shape) > 1 {
		ww("    VROWS = %s", strings.Join(shp[:len(shp)-1], " * "))
		ww("    VCOLS = %s", shp[len(shp)-1])
	} else {
		ww("    VCOLS = 128")
		ww("    VROWS = D // VCOLS if D %% VCOLS == 0 else pl.cdiv(D, 1024) * 8")
	}
	switch len(lay.shape) {
	case 1:
		view = func(p string) string { return "jnp.pad(p_" + p + ", (0, VROWS * VCOLS - D)).reshape(VROWS, VCOLS)" }
	case 2:
	default:
		view = func(p string) string { return "p_" + p + ".reshape(VROWS, VCOLS)" }
	}
	sub := t.sublanes()
	if flip {
		ww("    TRANSP = _column_major(VROWS, VCOLS)")
		ww("    KROWS, KCOLS = (VCOLS, VROWS) if TRANSP else (VROWS, VCOLS)")
		transposedBlocks(ww, lay, sub)
	} else if len(lay.colOff) > 0 {
		// an array read in column blocks ([rows, W*cols]) comes in whole rows,
		// once, and the kernel slices its blocks: no XLA slices
		var wide int64 = 1
		for _, w := range lay.colW {
			wide = max(wide, w)
		}
		ww("    BCOLS = VCOLS")
		ww("    BROWS = min(VROWS, max(%d, 65536 // (%d * BCOLS) // %d * %d))", sub, wide, sub, sub)
	} else {
		ww("    BCOLS = min(VCOLS, 2048 if VROWS >= %d else 65536)", sub)
		rowsMult := sub
		if len(lay.colv) > 0 {
			// a column vector comes in lane-dense (1, BROWS) blocks: BROWS a
			// multiple of 128 (or every row), not (BROWS, 1) blocks whose every
			// value fills a 128-lane tile row
			rowsMult = 128
		}
		ww("    BROWS = min(VROWS, max(%d, 65536 // BCOLS // %d * %d))", rowsMult, rowsMult, rowsMult)
	}
	ww("    spec = pl.BlockSpec((BROWS, BCOLS), lambda i, j: (i, j))")
	grid, sem := "(pl.cdiv(VROWS, BROWS), pl.cdiv(VCOLS, BCOLS))", `("parallel", "parallel")`
	outShape := "(VROWS, VCOLS)"
	perRow, perCol := "pl.BlockSpec((1, BROWS), lambda i, j: (0, i))", "pl.BlockSpec((1, BCOLS), lambda i, j: (0, j))"
	if flip {
		grid, outShape = "(pl.cdiv(KROWS, BROWS), pl.cdiv(KCOLS, BCOLS))", "(KROWS, KCOLS)"
		view = func(p string) string { return "(p_" + p + ".T if TRANSP else p_" + p + ")" }
		if len(lay.colv)+len(lay.bcast) > 0 {
			ww("    PERROW = %s", perRow)
			ww("    PERCOL = %s", perCol)
		}
		perRow, perCol = "PERCOL if TRANSP else PERROW", "PERROW if TRANSP else PERCOL"
	}
	var ins, inSpecs, oshapes, ospecs []string
	for i, l := range m.loads {
		prm := t.params[l.param]
		vec := "p_" + l.param
		if st, ok := lay.step[i]; ok {
			vec = stridedView(vec, prm, st[0], st[1])
		}
		if lay.bcast[i] {
			ins = append(ins, t.kernelInput(prm, vec+".reshape(1, VCOLS)"))
			inSpecs = append(inSpecs, perCol)
			continue
		}
		if lay.colv[i] {
			ins = append(ins, t.kernelInput(prm, vec+".reshape(1, VROWS)"))
			inSpecs = append(inSpecs, perRow)
			continue
		}
		if _, ok := lay.colOff[i]; ok {
			if colRef[l.param] == l.name+"_ref" {
				ins = append(ins, t.kernelInput(prm, "p_"+l.param))
				inSpecs = append(inSpecs, fmt.Sprintf("pl.BlockSpec((BROWS, %d * VCOLS), lambda i, j: (i, 0))", lay.colW[l.param]))
			}
			continue
		}
		ins = append(ins, t.kernelInput(prm, view(l.param)))
		inSpecs = append(inSpecs, "spec")
	}
	for _, s := range m.stores {
		oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct(%s, %s)", outShape, t.outBlockType(t.params[s.param])))
		ospecs = append(ospecs, "spec")
	}
	ww("    outs = pl.pallas_call(")
	ww("        %s,", partialKernel(kw))
	ww("        grid=%s,", grid)
	ww("        in_specs=[%s],", strings.Join(inSpecs, ", "))
	ww("        out_specs=[%s],", strings.Join(ospecs, ", "))
	ww("        out_shape=[%s],", strings.Join(oshapes, ", "))
	ww("        compiler_params=pltpu.CompilerParams(dimension_semantics=%s%s),", sem, inputFusion(ins))
	ww("        interpret=interpret,")
	ww("    )(%s)", strings.Join(ins, ", "))
	var res []string
	for i, s := range m.stores {
		prm := t.params[s.param]
		o := t.kernelOutput(prm, fmt.Sprintf("outs[%d]", i))
		switch {
		case len(lay.shape) == 1:
			o += ".reshape(-1)[:D]"
		case flip:
			o = "(" + o + ".T if TRANSP else " + o + ")"
		case len(lay.shape) == 2:
		default:
			o += ".reshape(" + t.shapePy(prm) + ")"
		}
		if !t.bitsHalf(prm) && blockDType(prm) != dtypePy(prm.DType) {
			o += ".astype(" + dtypePy(prm.DType) + ")"
		}
		res = append(res, fmt.Sprintf("%q: %s", s.param, o))
	}
	ww("    return {%s}", strings.Join(res, ", "))
	return kern, wrap
}

// stridedView is the wrapper's vector of every stride-th element of p
// (named v) from off: the column p[:, off] when p's last dimension is the
// stride, which XLA reads in place from the array's own layout (a (n, 4)
// float32 array is kept column-major, so the flat view's reshape(-1) is a
// relayout copy padding each row's 4 values to 128 lanes: box_iou 1.54x of
// the layout minimum; columns: 1.01x), else the flat view's slice.
func stridedView(v string, p *kernels.Param, stride, off int64) string {
	if n := len(p.Shape); n >= 2 {
		if last, err := strconv.ParseInt(strings.TrimSpace(p.Shape[n-1]), 10, 64); err == nil && last == stride {
			if n == 2 {
				return fmt.Sprintf("%s[:, %d]", v, off)
			}
			return fmt.Sprintf("%s[..., %d]", v, off)
		}
	}
	return fmt.Sprintf("%s.reshape(-1)[%d::%d]", v, off, stride)
}

// transposable reports whether an in-place draft over a 2-D view may run
// over the arrays' transposes: XLA keeps a (rows, cols) array column-major
// when that pads it less (every 32-bit shape of 150 measured, on v5e, v6e
// and TPU7x), and a Mosaic kernel takes row-major operands, so XLA would
// transpose every array into the kernel and the result back (focal_target
// at (1023, 1025): 3.2x the layout minimum; over the transposes, bitcasts
// then, 1.00x). Only for 2-D arrays of 32- or 16-bit elements, and not for
// column blocks of a wider array.
func transposable(t *tr, lay ewLayout) bool {
	if len(lay.shape) != 2 || len(lay.colOff) > 0 {
		return false
	}
	for _, p := range t.spec.Params {
		if p.Kind != "pointer" || len(p.Shape) != 2 {
			continue
		}
		switch p.DType {
		case "float32", "int32", "uint32", "int64", "uint64":
		case "float16", "bfloat16", "int16", "uint16":
			// 16-bit arrays tile (16, 128) and XLA keeps them column-major
			// by the same rule (_column_major matched its choice for 75
			// float16, bfloat16 and int16 shapes on v5e, v6e and TPU7x):
			// half_intrinsics at (1023, 1025) 5.45x -> 2.0x
		default:
			return false
		}
	}
	return true
}

// transposedBlocks sizes the blocks of the view the kernel runs over,
// (KROWS, KCOLS). A vector comes in (1, BROWS) blocks when it has one value
// per kernel row (per view row when not transposed, per column when it
// is): BROWS, the lane dimension of that block, is then a multiple of 128
// (or every row).
func transposedBlocks(ww func(string, ...any), lay ewLayout, sub int) {
	ww("    BCOLS = min(KCOLS, 2048 if KROWS >= %d else 65536)", sub)
	switch {
	case len(lay.colv) > 0 && len(lay.bcast) > 0:
		ww("    BROWS = min(KROWS, max(128, 65536 // BCOLS // 128 * 128))")
		return
	case len(lay.colv) > 0:
		ww("    MULT = %d if TRANSP else 128", sub)
	case len(lay.bcast) > 0:
		ww("    MULT = 128 if TRANSP else %d", sub)
	default:
		ww("    BROWS = min(KROWS, max(%d, 65536 // BCOLS // %d * %d))", sub, sub, sub)
		return
	}
	ww("    BROWS = min(KROWS, max(MULT, 65536 // BCOLS // MULT * MULT))")
}

// dropUnusedSwap removes the transposed blocks' swap of ROW and COL when no
// later line reads them (a kernel that never needs its position), and the
// lines that computed them.
func dropUnusedSwap(body []string) []string {
	for i, l := range body {
		if strings.HasPrefix(l, "    if TRANSP:") && i+1 < len(body) {
			rest := body[i+2:]
			if readsName(rest, "ROW") || readsName(rest, "COL") {
				return body
			}
			return pruneDead(slices.Concat(body[:i], rest))
		}
	}
	return body
}

// vectorLoad is the load of a vector read at the thread's row (perRow) or
// column: one value per kernel row comes in a lane-dense (1, BROWS) block,
// reshaped to a column; one value per kernel column in a (1, BCOLS) block,
// a row. Over the transposes (TRANSP) the two swap.
func vectorLoad(line string, perRow, flip bool) string {
	name, expr, _ := strings.Cut(line, " = ")
	asColumn := strings.Replace(expr, "[...]", "[...].reshape(SHAPE[0], 1)", 1)
	switch {
	case !flip && perRow:
		return name + " = " + asColumn
	case !flip:
		return line
	case perRow:
		return name + " = " + expr + " if TRANSP else " + asColumn
	}
	return name + " = " + asColumn + " if TRANSP else " + expr
}

// inputFusion is the allow_input_fusion compiler parameter (with its
// leading comma), "" when no input needs it: an input that is an XLA
// relayout or pad of an array (a 1-D array whose n is not a multiple of 128
// padded to whole tiles, a row or column vector, _blocked, _rows, a padded
// _lane_rows) is fused into the kernel's input rather than written to HBM
// and read back. A reshape that is a bitcast ((n / 128, 128), rows of a
// multiple of 128) is not fused: XLA would wrap it in a fusion and prefetch
// the whole array into VMEM first (a 32 MiB float32 vector: 3x the bytes).
// Gathers are left as they are.
func inputFusion(ins []string) string {
	var flags []string
	fused := false
	for _, in := range ins {
		f := fusionFlag(in)
		fused = fused || f != "False"
		flags = append(flags, f)
	}
	if !fused {
		return ""
	}
	return ", allow_input_fusion=[" + strings.Join(flags, ", ") + "]"
}

var (
	reViewReshape = regexp.MustCompile(`\.reshape\((VROWS|R), ([^,()]+|\([^()]*\))\)$`)
	reLaneRows    = regexp.MustCompile(`^_lane_rows\((p_[A-Za-z0-9_]+), [^,]+, (.+)\)$`)
)

// fusionFlag is the Python condition under which input in is a copy worth
// fusing ("True", "False" or an expression of the wrapper's sizes).
func fusionFlag(in string) string {
	if arg := callArg(in, "_f16_bits"); arg != in {
		// a float16 array's bits: the bitcast is fused into the kernel's
		// input (XLA would otherwise copy the array), except a gather's
		// result, whose bitcast fuses into the gather
		if strings.HasPrefix(arg, "p_") || strings.HasPrefix(arg, "(p_") || strings.HasPrefix(arg, "_blocked(") || strings.HasPrefix(arg, "_rows(") || strings.HasPrefix(arg, "_lane_rows(") ||
			strings.HasPrefix(arg, "jnp.pad(p_") {
			return "True"
		}
		return "False"
	}
	switch {
	case strings.HasPrefix(in, "_blocked(") || strings.HasPrefix(in, "_rows(") || strings.HasPrefix(in, "_halo(") || strings.HasPrefix(in, "_row_halo("):
		return "True"
	case reLaneRows.MatchString(in):
		m := reLaneRows.FindStringSubmatch(in)
		return m[1] + ".size != " + m[2]
	case strings.HasPrefix(in, "jnp.pad(p_"):
		// a 1-D array padded to whole tiles; no pad (a bitcast) when 128 divides it
		return "D % 128 != 0"
	case strings.HasSuffix(in, ".reshape(1, VCOLS)") || strings.HasSuffix(in, ".reshape(1, VROWS)") || strings.HasSuffix(in, ".reshape(1, L)"):
		return "True"
	case reViewReshape.MatchString(in):
		return reViewReshape.FindStringSubmatch(in)[2] + " % 128 != 0"
	}
	return "False"
}

var reArgLine = regexp.MustCompile(`^(\s*)([A-Za-z_][A-Za-z0-9_]*) = (args\["[^"]*"\])$`)

// mergeIntArgs folds "n = args["n"]" and a later "n = int(n)" into
// "n = int(args["n"])" when no line between them reads n.
func mergeIntArgs(lines []string) []string {
	drop := map[int]bool{}
	for i, l := range lines {
		m := reArgLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == m[1]+m[2]+" = int("+m[2]+")" {
				lines[i] = m[1] + m[2] + " = int(" + m[3] + ")"
				drop[j] = true
				break
			}
			if readsName(lines[j:j+1], m[2]) {
				break
			}
		}
	}
	var out []string
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l)
		}
	}
	return out
}

// padded is the kernel and wrapper for accesses that are not the thread's
// own position (broadcasts, strided views, masked or repeated stores): the
// domain is flattened into lane-dense (rows, 128·k) blocks, such inputs are
// gathered and such outputs scattered by XLA around the kernel.
func (m *ewMode) padded(t *tr, dims []string, ext map[string]val, flat, size poly) (kern, wrap []string, err error) {
	var refs []string
	for _, l := range m.loads {
		refs = append(refs, l.name+"_ref")
	}
	for _, s := range m.stores {
		refs = append(refs, s.name+"_ref")
	}
	var body []string
	w := func(format string, a ...any) { body = append(body, fmt.Sprintf(format, a...)) }
	w("    SHAPE = %s.shape", m.stores[0].name+"_ref")
	w("    ROW = pl.program_id(0) * SHAPE[0] + lax.broadcasted_iota(jnp.int32, SHAPE, 0)")
	w("    d = ROW * SHAPE[1] + lax.broadcasted_iota(jnp.int32, SHAPE, 1)")
	writeIndexVars(w, "    ", dims, ext)
	for _, l := range m.loads {
		if len(l.loops) == 0 {
			body = append(body, t.loadLine(l.name, l.name+"_ref", t.params[l.param]))
		}
	}
	for _, line := range t.lines {
		w("    %s", line)
	}
	body = pruneDead(pruneTemps(pruneDead(body)))
	kinds := m.classifyLoopLoads(t, flat)
	body, offs := m.shiftReads(body, kinds)
	pj := m.planeLoad(t, kinds, flat, dims)
	if pj >= 0 {
		var pk string
		var ok bool
		if body, pk, ok = m.planeReads(body, pj); ok {
			offs = append(offs, pk)
			refs = append(refs, "*scratch")
		} else {
			pj = -1
		}
	}
	// a load that only a gather's index reads (idx in points[idx[i]]) is
	// needed in the wrapper, not in the kernel
	kernelLoad := func(i int) bool { return !m.gathers() || readsName(body, m.loads[i].name+"_ref") }
	refs = slices.DeleteFunc(refs, func(r string) bool {
		i := slices.IndexFunc(m.loads, func(l ewAccess) bool { return l.name+"_ref" == r })
		return i >= 0 && !kernelLoad(i)
	})
	def, kw := kernelDef(refs, body, append(t.uniformNames(dims), offs...))
	def = strings.Replace(def, "*scratch, *, ", "*scratch, ", 1) // keyword-only already
	kern = append([]string{def}, body...)

	ww := func(format string, a ...any) { wrap = append(wrap, fmt.Sprintf(format, a...)) }
	t.writeDomain(ww, dims, ext)
	outs := t.outputParams()
	if pj >= 0 {
		m.writePlaneCall(t, ww, pj, dims, ext, size, kw, planeZFree(body, dims))
	}
	lanes, shape, rows := m.rowView(t, kinds, flat, size)
	rows = rows && pj < 0 // a plane load has its own layout
	sub := t.sublanes()
	if rows {
		// the array's own rows when XLA keeps it so (OWN), else the flat blocks
		ww("    OWN = _own_rows(%s, %d)", shape, sub)
		ww("    if OWN:")
		ww("        LANES = %s", lanes)
		ww("        VROWS = D // LANES")
		ww("        BROWS = min(_round_up(VROWS, %d), max(%d, 65536 // LANES // %d * %d))", sub, sub, sub, sub)
		ww("        PROWS = _round_up(VROWS, BROWS)")
		ww("    else:")
		ww("        LANES, BROWS, PROWS = _layout(D, %d)", sub)
		ww("        VROWS = PROWS")
	} else {
		ww("    LANES, BROWS, PROWS = _layout(D, %d)", sub)
	}
	ww("    DP = PROWS * LANES")
	m.writeWindowAddresses(ww, kinds, dims, ext, rows, sub)
	idxFrom := len(wrap)
	m.wrapperIndex(t, ww, dims, ext)
	cols := m.columnForm(t, kinds, body, pj)
	lsel := !cols && m.laneForm(t, kinds, body, pj)
	if cols {
		m.writeColumnIndex(t, ww)
	}
	if lsel {
		m.writeLaneIndex(t, ww)
	}
	idxTo := len(wrap)
	if cols {
		m.writeColumnCall(t, ww, kw)
	}
	if lsel {
		m.writeLaneCall(t, ww, kw)
	}
	var ins, inSpecs []string
	looped := false
	window := 0
	for i, l := range m.loads {
		switch {
		case kinds[i] != loopGathered:
			in, spec := windowIn(l, kinds[i], window, len(ins), rows, sub)
			window++
			ins = append(ins, in)
			inSpecs = append(inSpecs, spec)
			looped = true
			continue
		case len(l.loops) > 0:
			// one block per iteration: (iterations, rows, lanes)
			ins = append(ins, t.kernelInput(t.params[l.param], fmt.Sprintf("_gather_loop(p_%s, [%s %s], DP, LANES)", l.param, l.idx.py, loopComprehension(l.loops))))
			inSpecs = append(inSpecs, fmt.Sprintf("pl.BlockSpec((ins[%d].shape[0], BROWS, LANES), lambda i: (0, i, 0))", i))
			looped = true
			continue
		case l.gather:
			ins = append(ins, fmt.Sprintf("_take(p_%s, %s, DP, LANES)", l.param, m.flatLoads(t, l.at)))
		case rows:
			ins = append(ins, fmt.Sprintf("_blocked(p_%s, DP, LANES) if not OWN else p_%s.reshape(VROWS, LANES)", l.param, l.param))
		case l.idx.poly.equal(flat) && paramSize(t.params[l.param]).equal(size):
			ins = append(ins, fmt.Sprintf("_blocked(p_%s, DP, LANES)", l.param))
		default:
			ins = append(ins, fmt.Sprintf("_gather(p_%s, %s, DP, LANES)", l.param, l.idx.py))
		}
		if !m.gathers() {
			ins[len(ins)-1] = t.kernelInput(t.params[l.param], ins[len(ins)-1])
		}
		inSpecs = append(inSpecs, "spec")
	}
	if m.gathers() && looped {
		return nil, nil, refuse(CodeDataIndex, "a gather by value beside a loop's per-iteration reads")
	}
	if m.gathers() {
		// a gather's index reads the blocks before it: each block is named
		var kins []string
		for i, l := range m.loads {
			ww("    %s_in = %s", l.name, ins[i])
			if kernelLoad(i) {
				kins = append(kins, t.kernelInput(t.params[l.param], l.name+"_in"))
			}
		}
		ins = kins
	}
	ww("    ins = [")
	for _, in := range ins {
		ww("        %s,", in)
	}
	ww("    ]")
	ww("    spec = pl.BlockSpec((BROWS, LANES), lambda i: (i, 0))")
	var oshapes, ospecs []string
	for i, s := range m.stores {
		if len(s.loops) > 0 {
			oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct((dst_%d.shape[0], PROWS, LANES), %s)", i, t.blockType(t.params[s.param])))
			ospecs = append(ospecs, fmt.Sprintf("pl.BlockSpec((dst_%d.shape[0], BROWS, LANES), lambda i: (0, i, 0))", i))
			continue
		}
		if rows {
			// the array's own rows (OWN): the last block's rows past them are dropped
			oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct((VROWS, LANES), %s)", t.outBlockType(t.params[s.param])))
		} else {
			oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct((PROWS, LANES), %s)", t.outBlockType(t.params[s.param])))
		}
		ospecs = append(ospecs, "spec")
	}
	ww("    outs = pl.pallas_call(")
	ww("        %s,", partialKernel(kw))
	ww("        grid=(PROWS // BROWS,),")
	if looped {
		ww("        in_specs=[%s],", strings.Join(inSpecs, ", "))
	} else {
		ww("        in_specs=[spec] * len(ins),")
	}
	if m.anyLoopStore() {
		ww("        out_specs=[%s],", strings.Join(ospecs, ", "))
	} else {
		ww("        out_specs=[spec] * %d,", len(m.stores))
	}
	ww("        out_shape=[%s],", strings.Join(oshapes, ", "))
	ww("        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",)%s),", inputFusion(ins))
	ww("        interpret=interpret,")
	ww("    )(*ins)")
	count := map[string]int{}
	for _, s := range m.stores {
		count[s.param]++
	}
	done := map[string]bool{}
	for i, s := range m.stores {
		prm := t.params[s.param]
		shape := t.shapePy(prm)
		if count[s.param] == 1 && isTrue(s.mask) && s.idx.poly.equal(flat) && paramSize(prm).equal(size) {
			ww("    r_%s = _unblock(%s, D, %s, %s)", s.param, t.kernelOutput(prm, fmt.Sprintf("outs[%d]", i)), shape, dtypePy(prm.DType))
			done[s.param] = true
			continue
		}
		if !done[s.param] {
			if prm.Role == "inout" {
				ww("    r_%s = p_%s.reshape(-1)", s.param, s.param)
			} else {
				ww("    r_%s = jnp.zeros((%s,), %s)", s.param, shapeProd(shape), dtypePy(prm.DType))
			}
			done[s.param] = true
		}
		if len(s.loops) > 0 {
			ww("    r_%s = _scatter_loop(r_%s, dst_%d, %s)", s.param, s.param, i, t.kernelOutput(prm, fmt.Sprintf("outs[%d]", i)))
			continue
		}
		ww("    r_%s = _scatter(r_%s, %s, %s, %s, d, D)", s.param, s.param, s.idx.py, maskPy(s.mask), t.kernelOutput(prm, fmt.Sprintf("outs[%d]", i)))
	}
	var res []string
	for _, p := range outs {
		res = append(res, fmt.Sprintf("%q: r_%s.reshape(%s)", p.Name, p.Name, t.shapePy(p)))
	}
	ww("    return {%s}", strings.Join(res, ", "))
	if !m.anyLoopStore() {
		wrap = pruneIndexLines(wrap, idxFrom, idxTo)
	}
	return kern, wrap, nil
}

func (m *ewMode) gathers() bool {
	return slices.ContainsFunc(m.loads, func(l ewAccess) bool { return l.gather })
}

// flatLoads is a gather's index for the wrapper: each load it reads is
// that load's block input flattened (the value every position holds, as
// the kernel's load line reads it).
func (m *ewMode) flatLoads(t *tr, at string) string {
	return rePyIdent.ReplaceAllStringFunc(at, func(id string) string {
		for _, l := range m.loads {
			if l.name == id {
				return fmt.Sprintf("%s_in.reshape(-1).astype(%s)", l.name, computeType(t.params[l.param]))
			}
		}
		return id
	})
}

// renderDraft renames the placeholders, prunes the wrapper and joins the
// kernel, run() and the helpers they call.
func renderDraft(t *tr, nm *renamer, kern, wrap []string) string {
	wrap = pruneDead(wrap)
	for i := range kern {
		kern[i] = nm.apply(kern[i])
	}
	for i := range wrap {
		wrap[i] = nm.apply(wrap[i])
	}
	wrap = mergeIntArgs(wrap)
	wrap = append(nullGuards(t), wrap...)
	return strings.Join(kern, "\n") + "\n\n\ndef run(args, *, interpret):\n" + strings.Join(wrap, "\n") + "\n"
}

// nullGuards make run() refuse a non-empty array for a pointer the draft
// took as NULL: the draft has no code for the branches a real pointer takes.
func nullGuards(t *tr) []string {
	var out []string
	for _, name := range t.nulls {
		out = append(out, fmt.Sprintf("    if args[%q].size:", name),
			fmt.Sprintf("        raise ValueError(%q)", name+": this draft covers the launches where it is NULL (an empty tensor)"))
	}
	return out
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
// writeDomain writes a wrapper's prologue over a launch domain: the arguments, each dimension's extent E_<d>, the
// domain's size D as their product, and the empty result when D is not positive.
func (t *tr) writeDomain(w func(string, ...any), dims []string, ext map[string]val) {
	t.writeArgs(w)
	for _, d := range dims {
		w("    E_%s = %s", d, ext[d].py)
	}
	var dprod []string
	for _, d := range dims {
		dprod = append(dprod, "E_"+d)
	}
	w("    D = %s", strings.Join(dprod, " * "))
	w("    if D <= 0:")
	w("        return {%s}", t.emptyResult(t.outputParams()))
}

func (t *tr) writeArgs(w func(string, ...any)) {
	for _, p := range t.spec.Params {
		if p.Kind == "pointer" && p.Role == "output" {
			continue
		}
		if p.Kind == "pointer" && p.DType == "float16" && !t.halfBits {
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
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
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
		case "float16":
			if t.halfBits {
				sub = max(sub, 16) // int16 bits
			}
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
