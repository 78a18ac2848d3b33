package pallas

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// rtLoop is a loop with a runtime trip count: the kernel iterates lv over
// the uniform range [lo, hi) in lock-step for every thread (a Python loop
// over static bounds); iterations outside a thread's own bounds are masked.
type rtLoop struct {
	lv     string            // Python name of the iteration variable
	cname  string            // the C loop variable's name (for the generated code)
	lo, hi val               // uniform bounds (Python ints when the kernel runs)
	alive0 val               // t.alive before the loop: assignments carried out of an iteration are masked against the body's
	scope  int               // env depth of the loop's own scope: names declared below it are carried
	carry  map[string]string // carried C names to their Python names
	head   string            // the kernel's `for` line of the loop (emitBeforeLoops)
}

// stateful modes can save and restore what a translation attempt changed
// (the loads and stores it recorded), so a loop can be tried unrolled first.
type stateful interface {
	saveState() (restore func())
}

// save snapshots the translator and its mode; restore returns to it.
func (t *tr) save(sm stateful) func() {
	lines := slices.Clone(t.lines)
	notes := slices.Clone(t.notes)
	nulls := slices.Clone(t.nulls)
	missing := slices.Clone(t.missing)
	nloops := slices.Clone(t.nloops)
	envs := t.env.snapshot()
	tmp, ind, path, alive := t.tmp, t.ind, t.path, t.alive
	restoreMode := sm.saveState()
	return func() {
		t.lines, t.notes, t.nulls, t.missing, t.nloops = lines, notes, nulls, missing, nloops
		t.env.scopes = envs
		t.tmp, t.ind, t.path, t.alive = tmp, ind, path, alive
		restoreMode()
	}
}

// clampBound records the uniform bound of max(L, e) (a lower bound) or
// min(U, e) (an upper bound) on an integer result.
func clampBound(out *val, fn string, vs []val) {
	if !isInt(out.ct) || len(vs) != 2 || out.k == kUniform {
		return
	}
	for i, v := range vs {
		other := vs[1-i]
		if v.k != kUniform || other.k == kUniform || !isInt(v.ct) {
			continue
		}
		b := v
		switch fn {
		case "max":
			out.lower = &b
		case "min":
			out.upper = &b
		}
		return
	}
}

// inRuntimeLoop: the innermost enclosing loop is a runtime one... or any
// enclosing loop is (stores and returns inside are refused either way).
func (t *tr) inRuntimeLoop() bool {
	for _, l := range t.loops {
		if l != nil {
			return true
		}
	}
	return false
}

// innerRuntime is the innermost enclosing runtime loop, if any.
func (t *tr) innerRuntime() *rtLoop {
	for i := len(t.loops) - 1; i >= 0; i-- {
		if t.loops[i] != nil {
			return t.loops[i]
		}
	}
	return nil
}

// forLoop unrolls a loop with a constant trip count; a loop whose trip
// count is a runtime value becomes a runtime loop where the mode supports
// one (elementwise kernels).
func (t *tr) forLoop(n *ts.Node) error {
	sm, ok := t.mode.(stateful)
	if !ok {
		return t.unrolledFor(n)
	}
	restore := t.save(sm)
	err := t.unrolledFor(n)
	r, isRef := AsRefusal(err)
	if err == nil || !isRef || r.Code != CodeUnsupported || !strings.Contains(r.Message, "constant trip count") {
		return err
	}
	restore()
	return t.runtimeFor(n)
}

// loopHead is a counting loop's parts: for (T v = A; v < B; v++).
type loopHead struct {
	name      string
	ct        string
	init      *ts.Node
	bound     *ts.Node
	inclusive bool // v <= B
}

func (t *tr) parseLoopHead(n *ts.Node) (loopHead, error) {
	src := oneLine(t.u.text(n))
	init, condN, upd := n.ChildByFieldName("initializer"), strip(n.ChildByFieldName("condition")), strip(n.ChildByFieldName("update"))
	var h loopHead
	if init == nil || condN == nil || upd == nil || init.Type() != "declaration" {
		return h, refuse(CodeLoop, "loop %q: only for (int v = A; v < B; v++) loops translate", src)
	}
	for _, d := range ts.Children(init) {
		if d.Type() == "init_declarator" {
			if h.name != "" {
				return h, refuse(CodeLoop, "loop %q declares several variables", src)
			}
			h.name = declName(d.ChildByFieldName("declarator"), t.u)
			h.init = d.ChildByFieldName("value")
		}
	}
	ct, err := t.normType(t.u.text(init.ChildByFieldName("type")))
	if err != nil {
		return h, err
	}
	if h.name == "" || h.init == nil || !isInt(ct) || ct == "bool" {
		return h, refuse(CodeLoop, "loop %q: its variable is not an initialised integer", src)
	}
	h.ct = ct
	if condN.Type() != "binary_expression" {
		return h, refuse(CodeLoop, "loop %q: its condition is not a comparison", src)
	}
	op := t.u.text(condN.ChildByFieldName("operator"))
	l, r := strip(condN.ChildByFieldName("left")), strip(condN.ChildByFieldName("right"))
	switch {
	case (op == "<" || op == "<=") && t.u.text(l) == h.name:
		h.bound, h.inclusive = r, op == "<="
	case (op == ">" || op == ">=") && t.u.text(r) == h.name:
		h.bound, h.inclusive = l, op == ">="
	default:
		return h, refuse(CodeLoop, "loop %q: only loops counting up to a bound translate", src)
	}
	if mentions(h.bound, h.name, t.u) {
		return h, refuse(CodeLoop, "loop %q: its bound reads the loop variable", src)
	}
	u := strings.Join(strings.Fields(t.u.text(upd)), "")
	if u != h.name+"++" && u != "++"+h.name && u != h.name+"+=1" && u != h.name+"="+h.name+"+1" {
		return h, refuse(CodeLoop, "loop %q: only loops counting up by one translate", src)
	}
	return h, nil
}

// mentions reports whether identifier name occurs in n.
func mentions(n *ts.Node, name string, u *unit) bool {
	if n == nil {
		return false
	}
	if n.Type() == "identifier" && u.text(n) == name {
		return true
	}
	for _, c := range ts.Children(n) {
		if mentions(c, name, u) {
			return true
		}
	}
	return false
}

// loopRange is the uniform range a runtime loop iterates, the value of the
// C variable at iteration lv, and the mask of the iterations a thread runs.
type loopRange struct {
	lo, hi val
	v      func(lv val) (val, error)
	mask   func(lv val) (val, error)
	// shifted: the C variable is the thread's start plus the iteration
	shifted bool
}

func (t *tr) loopRange(h loopHead, src string) (loopRange, error) {
	a, err := t.expr(h.init)
	if err != nil {
		return loopRange{}, err
	}
	if a, err = t.castTo(a, h.ct); err != nil {
		return loopRange{}, err
	}
	b, err := t.expr(h.bound)
	if err != nil {
		return loopRange{}, err
	}
	if a.k == kData || b.k == kData {
		return loopRange{}, refuse(CodeLoop, "loop %q: its trip count depends on loaded data (no static bound)", src)
	}
	if !isInt(a.ct) || !isInt(b.ct) {
		return loopRange{}, refuse(CodeLoop, "loop %q: its bounds are not integers", src)
	}
	one := val{py: "1", ct: "int", k: kUniform, poly: pconst(1)}
	end := b
	if h.inclusive {
		if end, err = t.binop("+", b, one); err != nil {
			return loopRange{}, err
		}
	}
	ident := func(lv val) (val, error) { return lv, nil }
	none := func(val) (val, error) { return truth(), nil }
	if a.k == kUniform && end.k == kUniform {
		return loopRange{lo: a, hi: end, v: ident, mask: none}, nil
	}
	// a bound that moves with the thread by a uniform trip count:
	// for (v = s; v < s + K; v++) iterates K steps from s
	if py, ok := polyPy(end.poly.add(a.poly, -1)); ok {
		if in := strings.TrimSuffix(strings.TrimPrefix(py, "("), ")"); isName(in) {
			py = in
		}
		hi := val{py: py, ct: "int", k: kUniform, poly: end.poly.add(a.poly, -1)}
		shift := func(lv val) (val, error) { return t.binop("+", a, lv) }
		return loopRange{lo: zeroIdx(), hi: hi, v: shift, mask: none, shifted: true}, nil
	}
	lo, hi := a, end
	if a.k != kUniform {
		if a.lower == nil {
			return loopRange{}, refuse(CodeLoop, "loop %q: its start varies with the thread and has no uniform lower bound (max(L, …))", src)
		}
		lo = *a.lower
	}
	if end.k != kUniform {
		if b.upper == nil {
			return loopRange{}, refuse(CodeLoop, "loop %q: its end varies with the thread and has no uniform upper bound (min(U, …))", src)
		}
		hi = *b.upper
		if h.inclusive {
			if hi, err = t.binop("+", hi, one); err != nil {
				return loopRange{}, err
			}
		}
	}
	mask := func(lv val) (val, error) {
		m := truth()
		if a.k != kUniform {
			c, err := t.binop(">=", lv, a)
			if err != nil {
				return val{}, err
			}
			m = and(m, c)
		}
		if end.k != kUniform {
			c, err := t.binop("<", lv, end)
			if err != nil {
				return val{}, err
			}
			m = and(m, c)
		}
		return m, nil
	}
	return loopRange{lo: lo, hi: hi, v: ident, mask: mask}, nil
}

// carriedNames are the outer locals a loop body assigns.
func (t *tr) carriedNames(body *ts.Node) []string {
	var out []string
	var walk func(n *ts.Node)
	walk = func(n *ts.Node) {
		if n == nil {
			return
		}
		var lhs *ts.Node
		switch n.Type() {
		case "assignment_expression":
			lhs = strip(n.ChildByFieldName("left"))
		case "update_expression":
			lhs = strip(n.ChildByFieldName("argument"))
		}
		if lhs != nil {
			name := t.u.text(lhs)
			if lhs.Type() == "field_expression" {
				name = t.u.text(lhs.ChildByFieldName("argument"))
			}
			if _, ok := t.env.lookup(name); ok && (lhs.Type() == "identifier" || lhs.Type() == "field_expression") && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		for _, c := range ts.Children(n) {
			walk(c)
		}
	}
	walk(body)
	return out
}

// runtimeFor translates a counting loop whose trip count is a runtime
// uniform value, or whose thread-dependent bounds are clamped to (or
// shifted by) a uniform range: a Python loop over that range in the kernel
// (static bounds: unrolled when traced), values the body assigns carried
// across iterations, loads at iteration-dependent addresses gathered per
// iteration by the wrapper.
func (t *tr) runtimeFor(n *ts.Node) error {
	src := oneLine(t.u.text(n))
	h, err := t.parseLoopHead(n)
	if err != nil {
		return err
	}
	rg, err := t.loopRange(h, src)
	if err != nil {
		return err
	}
	for _, l := range t.loops {
		if l != nil && readsName([]string{rg.lo.py, rg.hi.py}, l.lv) {
			return refuse(CodeLoop, "loop %q: its range depends on an enclosing loop's variable", src)
		}
	}
	body := n.ChildByFieldName("body")
	loop := &rtLoop{lv: t.fresh("lv"), cname: h.name, lo: rg.lo, hi: rg.hi, alive0: t.alive, carry: map[string]string{}}
	if rg.shifted {
		loop.cname = h.name + "_step" // the iteration's step from the thread's own start
	}
	// carried values: bound to one Python name each, data from here on
	carried := t.carriedNames(body)
	for _, name := range carried {
		old, _ := t.env.lookup(name)
		if old.vec != nil || old.ptr != nil || old.acc != nil || old.lane0 || old.sp != 0 {
			return refuse(CodeLoop, "loop %q carries %s (a vector, pointer or partial value) across its iterations", src, name)
		}
		cv := t.carriedBy(old.py)
		if cv == "" {
			cv = t.fresh("cv")
			t.emit("%s = %s", cv, old.py)
		}
		loop.carry[name] = cv
		t.env.set(name, val{py: cv, ct: old.ct, k: kData})
	}
	head := len(t.lines)
	if rg.lo.py == "0" {
		t.emit("for %s in range(%s):", loop.lv, rg.hi.py)
	} else {
		t.emit("for %s in range(%s, %s):", loop.lv, rg.lo.py, rg.hi.py)
	}
	loop.head = t.lines[head]
	savedInd, savedAlive, savedW := t.ind, t.alive, t.aliveW
	t.ind += "    "
	t.env.push()
	loop.scope = len(t.env.scopes) - 1
	t.loops = append(t.loops, loop)
	t.nloops = append(t.nloops, loop)
	defer func() {
		t.loops = t.loops[:len(t.loops)-1]
		t.env.pop()
		t.ind, t.alive, t.aliveW = savedInd, savedAlive, savedW
	}()
	lv := val{py: loop.lv, ct: h.ct, k: kUniform, poly: popaque(loop.lv, kUniform)}
	v, err := rg.v(lv)
	if err != nil {
		return err
	}
	mask, err := rg.mask(lv)
	if err != nil {
		return err
	}
	t.env.declare(h.name, v)
	t.narrow(mask)
	if err := t.block(body); err != nil {
		return err
	}
	if cur, _ := t.env.lookup(h.name); cur.py != v.py {
		return refuse(CodeLoop, "loop %q: its body assigns the loop variable", src)
	}
	for _, name := range carried {
		cur, _ := t.env.lookup(name)
		cv := loop.carry[name]
		if cur.py != cv {
			t.emit("%s = %s", cv, cur.py)
		}
		t.env.set(name, val{py: cv, ct: cur.ct, k: kData})
	}
	if len(t.lines) == head+1 {
		t.lines = t.lines[:head] // the body computes nothing
	}
	return nil
}

// maskCarried keeps a carried value where the thread does not run this
// iteration's assignment (outside its own bounds, after a continue).
func (t *tr) maskCarried(name string, old, nv val) val {
	l := t.innerRuntime()
	if l == nil || t.env.scopeOf(name) >= l.scope || t.alive.py == l.alive0.py {
		return nv
	}
	return where(t.alive, nv, old, old.ct)
}

// loopJump: continue inside a runtime loop ends the thread's iteration
// (what follows is masked for it); break is refused.
func (t *tr) loopJump(n *ts.Node) error {
	if len(t.loops) == 0 || t.loops[len(t.loops)-1] == nil || t.depth > 0 {
		return refuse(CodeLoop, "%s outside a loop with a runtime trip count", n.Type())
	}
	if n.Type() == "break_statement" {
		return refuse(CodeLoop, "break inside a loop with a runtime trip count")
	}
	t.narrow(not(t.path))
	return nil
}

// wrapperAlive is alive as the wrapper computes it (the kernel names the
// masks of runtime loops).
func (t *tr) wrapperAlive() val {
	if t.aliveW != nil {
		return *t.aliveW
	}
	return t.alive
}

// narrow drops the threads outside m for the rest of the iteration.
func (t *tr) narrow(m val) {
	if isTrue(m) {
		return
	}
	w := and(t.wrapperAlive(), m)
	t.aliveW = &w
	t.alive = t.bindMask(and(t.alive, m))
}

// bindMask names a runtime loop's iteration mask in the kernel (it only
// masks kernel values there: stores inside such loops are refused).
func (t *tr) bindMask(m val) val {
	if isName(m.py) {
		return m
	}
	name := t.fresh("m")
	t.emit("%s = %s", name, m.py)
	if t.maskDefs == nil {
		t.maskDefs = map[string]string{}
	}
	t.maskDefs[name] = m.py
	m.py = name
	return m
}

// carriedBy is the Python name an enclosing runtime loop carries py in
// (a nested loop carries the same value in the same name), else "".
func (t *tr) carriedBy(py string) string {
	for _, l := range t.loops {
		if l == nil {
			continue
		}
		for _, cv := range l.carry {
			if cv == py {
				return cv
			}
		}
	}
	return ""
}

// loopsOf are the runtime loops whose variable idx reads, outermost first.
func (t *tr) loopsOf(idx val) []*rtLoop {
	var out []*rtLoop
	for _, l := range t.loops {
		if l != nil && readsName([]string{idx.py}, l.lv) {
			out = append(out, l)
		}
	}
	return out
}

// loopIndexPy is the flat iteration number over loops (outermost first),
// the order the wrapper gathers them in.
func loopIndexPy(loops []*rtLoop) string {
	j := ""
	for _, l := range loops {
		step := l.lv
		if l.lo.py != "0" {
			step = "(" + l.lv + " - " + l.lo.py + ")"
		}
		if j == "" {
			j = step
			continue
		}
		count := l.hi.py
		if l.lo.py != "0" {
			count = "(" + l.hi.py + " - " + l.lo.py + ")"
		}
		j = fmt.Sprintf("%s * %s + %s", j, count, step)
	}
	return j
}

// loopComprehension is the wrapper's "for lv in range(lo, hi) …" over loops.
func loopComprehension(loops []*rtLoop) string {
	var parts []string
	for _, l := range loops {
		if l.lo.py == "0" {
			parts = append(parts, fmt.Sprintf("for %s in range(%s)", l.lv, l.hi.py))
		} else {
			parts = append(parts, fmt.Sprintf("for %s in range(%s, %s)", l.lv, l.lo.py, l.hi.py))
		}
	}
	return strings.Join(parts, " ")
}

// loopNames names runtime loops' variables and carried values after the C
// names they stand for.
func loopNames(nm *renamer, loops []*rtLoop) {
	for _, l := range loops {
		nm.add(l.lv, l.cname)
		for _, c := range sortedKeys(l.carry) {
			nm.add(l.carry[c], c)
		}
	}
}

// loopStore records a store inside runtime loops: each iteration writes
// its own block of the output (iterations, rows, lanes), which the wrapper
// scatters to the addresses the iteration wrote, masked by the thread's
// own bounds. The addresses depend on sizes only, so the wrapper checks
// them before the kernel runs (no two writes of different threads or
// iterations overlap: their order would matter) and raises otherwise.
func (m *ewMode) loopStore(t *tr, p ptrv, prm *kernels.Param, idx, v val) error {
	mask := and(t.wrapperAlive(), t.path)
	if mask.k == kData {
		return refuse(CodeLoop, "%s is written inside a loop under a data-dependent condition", p.base)
	}
	if m.stored[p.base] {
		return refuse(CodeLoop, "%s is written more than once, inside a loop with a runtime trip count", p.base)
	}
	var loops []*rtLoop
	for _, l := range t.loops {
		if l != nil {
			loops = append(loops, l)
		}
	}
	cv, _, err := t.castToElem(v, prm)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("st%d", len(m.stores))
	m.stores = append(m.stores, ewAccess{name: name, param: p.base, idx: idx, mask: mask, value: cv, loops: loops})
	m.stored[p.base] = true
	m.touched = true
	ref := fmt.Sprintf("%s_ref[%s]", name, loopIndexPy(loops))
	value := cv.py
	switch {
	case t.bitsHalf(prm) && cv.k == kUniform:
		value = fmt.Sprintf("_f2h(jnp.full(%s_ref.shape[1:], %s, jnp.float32))", name, cv.py)
	case t.bitsHalf(prm):
		value = "_f2h(" + callArg(callArg(cv.py, "_f16"), "") + ")"
	case cv.k == kUniform:
		value = fmt.Sprintf("jnp.full(%s_ref.shape[1:], %s, %s_ref.dtype)", name, cv.py, name)
	case blockDType(prm) != "jnp.float32" || !isFloat(cv.ct):
		value = "(" + cv.py + ").astype(" + name + "_ref.dtype)"
	}
	t.emit("%s = %s", ref, value)
	return nil
}

// loopStored: param is written inside a runtime loop.
func (m *ewMode) loopStored(param string) bool {
	for _, s := range m.stores {
		if s.param == param && len(s.loops) > 0 {
			return true
		}
	}
	return false
}

func (m *ewMode) anyLoopStore() bool {
	for _, s := range m.stores {
		if len(s.loops) > 0 {
			return true
		}
	}
	return false
}

// wrapperIndex writes the wrapper's domain index (d and the thread's
// coordinates); with stores inside runtime loops it is computed while
// tracing (it depends on sizes only), with each such store's destinations
// (dst_<i>), so that _loop_dst can check them.
func (m *ewMode) wrapperIndex(t *tr, ww func(string, ...any), dims []string, ext map[string]val) {
	if !m.anyLoopStore() {
		ww("    d = jnp.arange(DP, dtype=jnp.int32)")
		writeIndexVars(ww, "    ", dims, ext)
		return
	}
	// on the host's CPU: the TPU compile gate's default device is deviceless
	ww("    with jax.ensure_compile_time_eval(), jax.default_device(jax.devices(\"cpu\")[0]):")
	ww("        d = jnp.arange(DP, dtype=jnp.int32)")
	writeIndexVars(ww, "        ", dims, ext)
	for i, s := range m.stores {
		if len(s.loops) == 0 {
			continue
		}
		comp := loopComprehension(s.loops)
		ww("        dst_%d = _loop_dst([%s %s], [%s %s], d, D, %s)", i, s.idx.py, comp, maskPy(s.mask), comp, shapeProd(t.shapePy(t.params[s.param])))
	}
}

// pruneTemps drops assignments to translator temporaries (v1, m2, …) no
// other line reads, at any depth (pruneDead keeps the lines of loop bodies:
// a runtime loop's masks are unused in the kernel when only its stores,
// masked in the wrapper, needed them).
func pruneTemps(lines []string) []string {
	for {
		var out []string
		for i, l := range lines {
			m := rePyAssign.FindStringSubmatch(l)
			if m != nil && reTempName.MatchString(m[2]) && !readsName(slices.Delete(slices.Clone(lines), i, i+1), m[2]) {
				continue
			}
			out = append(out, l)
		}
		if len(out) == len(lines) {
			return out
		}
		lines = out
	}
}
