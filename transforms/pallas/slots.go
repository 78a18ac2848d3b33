package pallas

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// ---- bounds a condition implies ----

// bound is "e >= b" (lower) or "e < b" (upper), b uniform.
type bound struct {
	e     val
	lower bool
	b     val
}

// facts are the bounds that hold where a condition is true and where it
// is false (each a conjunction; nil when nothing is known).
type facts struct {
	whenTrue, whenFalse []bound
}

func (f *facts) negated() *facts {
	if f == nil {
		return nil
	}
	return &facts{whenTrue: f.whenFalse, whenFalse: f.whenTrue}
}

func (f *facts) onTrue() []bound {
	if f == nil {
		return nil
	}
	return f.whenTrue
}

func (f *facts) onFalse() []bound {
	if f == nil {
		return nil
	}
	return f.whenFalse
}

// bothFacts are the facts of a && b: both operands' bounds where it holds.
func bothFacts(a, b val) *facts {
	t := slices.Concat(a.facts.onTrue(), b.facts.onTrue())
	if len(t) == 0 {
		return nil
	}
	return &facts{whenTrue: t}
}

// eitherFacts are the facts of a || b: both operands' bounds where it fails.
func eitherFacts(a, b val) *facts {
	f := slices.Concat(a.facts.onFalse(), b.facts.onFalse())
	if len(f) == 0 {
		return nil
	}
	return &facts{whenFalse: f}
}

// cmpFacts are the bounds of a comparison of a signed integer that varies
// with the thread or the data against a uniform one (either side).
func (t *tr) cmpFacts(op string, a, b val) *facts {
	signed := func(v val) bool { return v.ct == "int" || v.ct == "int64" }
	if !signed(a) || !signed(b) || a.ct != b.ct {
		return nil
	}
	if a.k == kUniform && b.k != kUniform {
		mirror := map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
		op, a, b = mirror[op], b, a
	}
	if a.k == kUniform || b.k != kUniform || a.poly == nil || b.poly == nil {
		return nil
	}
	one := val{py: "1", ct: b.ct, k: kUniform, poly: pconst(1)}
	b1, err := t.binop("+", b, one)
	if err != nil {
		return nil
	}
	lo := func(c val) bound { return bound{e: a, lower: true, b: c} }
	hi := func(c val) bound { return bound{e: a, b: c} }
	switch op {
	case "<":
		return &facts{whenTrue: []bound{hi(b)}, whenFalse: []bound{lo(b)}}
	case "<=":
		return &facts{whenTrue: []bound{hi(b1)}, whenFalse: []bound{lo(b1)}}
	case ">":
		return &facts{whenTrue: []bound{lo(b1)}, whenFalse: []bound{hi(b1)}}
	case ">=":
		return &facts{whenTrue: []bound{lo(b)}, whenFalse: []bound{hi(b)}}
	case "==":
		return &facts{whenTrue: []bound{lo(b), hi(b1)}}
	case "!=":
		return &facts{whenFalse: []bound{lo(b), hi(b1)}}
	}
	return nil
}

// ---- stores at a loaded offset ----

// slotStore writes p[idx] = v where idx depends on loaded data linearly,
// idx = B + e·K with B and K free of data, under a condition that bounds e
// to a uniform range lo <= e < hi (mmcv's tin_shift: out[(i + shift) · hw ·
// c + offset] under `if (now_t < 0 || now_t >= t_size) continue;`). The
// store can then only reach the hi - lo elements B + u·K, u in [lo, hi),
// which depend on sizes only: each is a slot, one block of the output per
// slot, starting from the element's prior content (the array is inout,
// gathered at the slot's address) and taking v where e == u and the
// condition holds, in the thread's own order (a later iteration that hits
// the same slot overwrites it, as the C code does). The wrapper scatters
// the slots to their addresses, computed and checked while tracing as for
// loopStore: no two slots of different threads overlap (their order would
// matter) and none leaves the array, or run() raises.
func (m *ewMode) slotStore(t *tr, p ptrv, prm *kernels.Param, idx, v val) error {
	if prm.Role != "inout" {
		return refuse(CodeDataIndex, "%s is written at a data-dependent index and is not inout (what the kernel leaves unwritten is unknown)", p.base)
	}
	if m.stored[p.base] {
		return refuse(CodeDataIndex, "%s is written at a data-dependent index and elsewhere", p.base)
	}
	mask := and(t.alive, t.path)
	e, lo, hi, ok := slotRange(idx, mask)
	if !ok {
		return refuse(CodeDataIndex, "%s is written at a data-dependent index without a uniform range (lo <= e < hi) for its data part", p.base)
	}
	B, K, ok := splitLinear(idx.poly, e.poly)
	if !ok {
		return refuse(CodeDataIndex, "%s is written at a data-dependent index that is not B + e·K in its bounded part e", p.base)
	}
	sl := &rtLoop{lv: t.fresh("su"), cname: "slot", lo: lo, hi: hi}
	bu := B.add(K.mul(popaque(sl.lv, kUniform)), 1)
	at, ok := wrapperPolyPy(bu)
	if !ok {
		return refuse(CodeDataIndex, "%s is written at a data-dependent index whose other part cannot be computed from the sizes", p.base)
	}
	for _, l := range t.loops {
		if l != nil && readsName([]string{at, lo.py, hi.py}, l.lv) {
			return refuse(CodeDataIndex, "%s is written at a data-dependent index whose slots move with a loop's iteration", p.base)
		}
	}
	cv, _, err := t.castToElem(v, prm)
	if err != nil {
		return err
	}
	slotIdx := val{py: at, ct: "int", k: kIndex, poly: bu}
	loops := []*rtLoop{sl}
	prior := fmt.Sprintf("ld%d", len(m.loads))
	m.loads = append(m.loads, ewAccess{name: prior, param: p.base, idx: slotIdx, loops: loops, prior: true})
	name := fmt.Sprintf("st%d", len(m.stores))
	m.stores = append(m.stores, ewAccess{name: name, param: p.base, idx: slotIdx, mask: dataFree(and(t.wrapperAlive(), t.path)), value: cv, loops: loops})
	m.stored[p.base] = true
	m.touched = true
	t.nloops = append(t.nloops, sl)
	if !t.emitBeforeLoops(fmt.Sprintf("%s_ref[...] = %s_ref[...]", name, prior)) {
		return refuse(CodeInternal, "the loop around the store of %s was not found in the kernel", p.base)
	}
	value := cv.py
	if cv.k == kUniform || blockDType(prm) != "jnp.float32" || !isFloat(cv.ct) {
		value = "jnp.asarray(" + cv.py + ").astype(" + name + "_ref.dtype)"
	}
	hit := fmt.Sprintf("(%s == %s)", e.py, sl.lv)
	if !isTrue(mask) {
		hit = "jnp.logical_and(" + mask.py + ", " + hit + ")"
	}
	ref := fmt.Sprintf("%s_ref[%s]", name, loopIndexPy(loops))
	if lo.py == "0" {
		t.emit("for %s in range(%s):", sl.lv, hi.py)
	} else {
		t.emit("for %s in range(%s, %s):", sl.lv, lo.py, hi.py)
	}
	t.emit("    %s = jnp.where(%s, %s, %s)", ref, hit, value, ref)
	return nil
}

// slotRange finds in mask's facts a lower and an upper bound of one value
// that reads loaded data: lo <= e < hi.
func slotRange(idx val, mask val) (e, lo, hi val, ok bool) {
	if idx.poly == nil || (idx.ct != "int" && idx.ct != "int64") {
		return val{}, val{}, val{}, false
	}
	bs := mask.facts.onTrue()
	for _, l := range bs {
		if !l.lower || !l.e.poly.hasData() {
			continue
		}
		for _, u := range bs {
			if !u.lower && u.e.poly.equal(l.e.poly) {
				return l.e, l.b, u.b, true
			}
		}
	}
	return val{}, val{}, val{}, false
}

// splitLinear writes P as B + E·K with B and K free of data, reading K off
// the first data atom of E (coefficient 1 there).
func splitLinear(P, E poly) (B, K poly, ok bool) {
	var atomKey string
	for _, k := range sortedKeys(E) {
		ms := monomial(k)
		if len(ms) == 1 && ms[0].kind == atomData && E[k] == 1 {
			atomKey = k
			break
		}
	}
	if atomKey == "" {
		return nil, nil, false
	}
	K = poly{}
	for k, c := range P {
		ms := monomial(k)
		i := slices.IndexFunc(ms, func(a atom) bool { return a.key() == atomKey })
		if i < 0 {
			continue
		}
		rest := slices.Delete(slices.Clone(ms), i, i+1)
		K[monomialKey(rest)] += c
	}
	if len(K) == 0 || K.hasData() {
		return nil, nil, false
	}
	B = P.add(E.mul(K), -1)
	if B == nil || B.hasData() {
		return nil, nil, false
	}
	return B, K, true
}

// wrapperPolyPy is p as Python the wrapper and the kernel both evaluate:
// sizes, parameters, uniform sub-expressions, the thread's index and
// sub-expressions of it.
func wrapperPolyPy(p poly) (string, bool) {
	if len(p) == 0 {
		return "0", true
	}
	var terms []string
	for _, k := range sortedKeys(p) {
		var fs []string
		for _, a := range monomial(k) {
			switch a.kind {
			case atomSize:
				fs = append(fs, "s_"+a.name)
			case atomParam:
				fs = append(fs, "p_"+a.name)
			case atomVar:
				fs = append(fs, "iv_"+a.name)
			case atomOpaque, atomVarying:
				fs = append(fs, "("+a.name+")")
			default:
				return "", false
			}
		}
		if c := p[k]; c != 1 || len(fs) == 0 {
			fs = append([]string{fmt.Sprint(c)}, fs...)
		}
		terms = append(terms, strings.Join(fs, " * "))
	}
	return "(" + strings.Join(terms, " + ") + ")", true
}

// dataFree keeps the conjuncts of m that do not read loaded data: the
// slots a thread may write (a superset of those it does).
func dataFree(m val) val {
	if m.k != kData {
		return m
	}
	if m.conj == nil {
		return truth()
	}
	return and(dataFree(m.conj[0]), dataFree(m.conj[1]))
}

// emitBeforeLoops emits line before the outermost enclosing runtime loop
// (at its indentation), or here outside loops; false when that loop's head
// is no longer in the kernel.
func (t *tr) emitBeforeLoops(line string) bool {
	var outer *rtLoop
	for _, l := range t.loops {
		if l != nil {
			outer = l
			break
		}
	}
	if outer == nil {
		t.emit("%s", line)
		return true
	}
	for i, l := range t.lines {
		if l == outer.head {
			ind := l[:len(l)-len(strings.TrimLeft(l, " "))]
			t.lines = slices.Insert(t.lines, i, ind+line)
			return true
		}
	}
	return false
}

// ---- threads that repeat one another ----

// periodLines shrink a 1-D domain whose threads repeat one another: when
// every use of the thread's index x is a residue of it — x % a, (x / a) %
// b, ((x / a) / b) % c, … over positive uniform sizes — a thread computes
// what thread x mod M computes, M the largest such product (every other
// one divides it). mmcv's tin_shift runs nthreads = n·t·c·hw iterations of
// a loop whose body reads only (x / hw / c) % n, (x / hw) % c and x % hw:
// each element's work is done t times over, the same loads and the same
// stores. Those repeats are dropped (the domain is min(extent, M)), exact
// when the kernel reads nothing it writes (a repeat would then see its
// twin's writes: y[i] += 1 twice is not once) and every store sets its
// element; otherwise, and where x is used in any other way, nothing changes.
func (m *ewMode) periodLines(t *tr, dims []string) []string {
	if len(dims) != 1 || dims[0] != "x" {
		return nil
	}
	var texts []string
	texts = append(texts, t.lines...)
	for _, l := range m.loads {
		if m.stored[l.param] && !l.prior {
			return nil
		}
		texts = append(texts, l.idx.py, l.at)
	}
	for _, s := range m.stores {
		texts = append(texts, s.idx.py, s.mask.py)
	}
	var longest []string
	var chains [][]string
	for _, s := range texts {
		for _, loc := range reIndexX.FindAllStringIndex(s, -1) {
			fs, ok := residueChain(s, loc[0], loc[1])
			if !ok {
				return nil
			}
			chains = append(chains, fs)
			if len(fs) > len(longest) {
				longest = fs
			}
		}
	}
	if longest == nil {
		return nil
	}
	for _, fs := range chains {
		if !subMultiset(fs, longest) {
			return nil
		}
	}
	var pos []string
	for _, f := range longest {
		pos = append(pos, f+" > 0")
	}
	return []string{
		"    # threads repeat one another with this period: the first ones do all the work",
		"    if " + strings.Join(pos, " and ") + ":",
		"        E_x = min(E_x, " + strings.Join(longest, " * ") + ")",
	}
}

var (
	reIndexX   = regexp.MustCompile(`\biv_x\b`)
	reFactorOK = regexp.MustCompile(`^(\(|\)|\s|[0-9]+|\*|[ps]_[A-Za-z0-9_]+)*$`)
)

// residueChain reads the calls around s[i:j] (the thread's index) outward:
// _c_div(·, a, jnp.int32) any number of times, then _c_rem(·, b, jnp.int32);
// the factors a…, b are uniform (sizes, parameters, literals).
func residueChain(s string, i, j int) ([]string, bool) {
	var fs []string
	for {
		fn := ""
		for _, f := range []string{"_c_div(", "_c_rem("} {
			if strings.HasSuffix(s[:i], f) {
				fn = f
			}
		}
		if fn == "" || !strings.HasPrefix(s[j:], ", ") {
			return nil, false
		}
		k, ok := argEnd(s, j+2)
		if !ok {
			return nil, false
		}
		f := strings.TrimSpace(s[j+2 : k])
		if !reFactorOK.MatchString(f) {
			return nil, false
		}
		fs = append(fs, "("+f+")")
		rest := s[k:]
		if !strings.HasPrefix(rest, ", jnp.int32)") {
			return nil, false
		}
		i, j = i-len(fn), k+len(", jnp.int32)")
		if fn == "_c_rem(" {
			return fs, true
		}
	}
}

// argEnd is the end of the call argument starting at s[i] (the first comma
// or closing parenthesis outside brackets).
func argEnd(s string, i int) (int, bool) {
	depth := 0
	for k := i; k < len(s); k++ {
		switch s[k] {
		case '(', '[':
			depth++
		case ')', ']':
			if depth == 0 {
				return k, true
			}
			depth--
		case ',':
			if depth == 0 {
				return k, true
			}
		}
	}
	return 0, false
}

// subMultiset: every factor of a, counted, is one of b's.
func subMultiset(a, b []string) bool {
	left := slices.Clone(b)
	for _, f := range a {
		i := slices.Index(left, f)
		if i < 0 {
			return false
		}
		left = slices.Delete(left, i, i+1)
	}
	return true
}
