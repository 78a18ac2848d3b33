package pallas

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// Loads inside loops with runtime trip counts (window loops) whose address
// is not a gather: the wrapper would otherwise gather one full block per
// iteration (XLA gathers, each costed at many times its output, and a
// stack of them written to HBM and read back: v6e bytes accessed 150-340x
// the minimum on window_clamp). Two address shapes need no gather at all:
//
//   - uniform: the same address for every thread (a filter tap,
//     weight[hidx * kernel_size + x]): the wrapper takes the one element per
//     iteration (a vector of iterations), which the kernel reads from SMEM
//     as a scalar;
//   - shifted: the element's own flat position plus a uniform offset per
//     iteration (input[(n * height + y) * width + x] with y = h + dy and
//     x = w + dx): the kernel reads its block of the source with a halo of
//     whole rows on either side (an element-indexed block of the source,
//     flattened and padded with zeros once, the pad fused into the kernel's
//     input) and shifts it by the offset in VMEM (a row offset and a lane
//     rotation), so the source is read about once.
//
// Both are decided on the address's polynomial, after a / b and a % b of
// the same operands are recombined into a (a == (a / b) * b + a % b holds
// for C's truncating division whatever the signs), so a position taken
// apart into (n, h, w) and put back together is recognised as the element's
// own. Only 32-bit data takes these forms (SMEM scalars and lane rotations
// are 32-bit); anything else keeps the per-iteration gather.

// divAtom is an atom of a poly that is a C quotient or remainder of two
// integer values, with their polys.
type divAtom struct {
	a, b poly
	rem  bool
}

// noteDivRem records v = a / b (rem false) or a % b as an atom recombine
// can put back together.
func (t *tr) noteDivRem(v, a, b val, rem bool) {
	if a.poly == nil || b.poly == nil || len(v.poly) != 1 {
		return
	}
	if t.divs == nil {
		t.divs = map[string]divAtom{}
	}
	for k := range v.poly {
		t.divs[k] = divAtom{a: a.poly, b: b.poly, rem: rem}
	}
}

// recombine rewrites every c * (a % b) * m + c * (a / b) * b * m of p as
// c * a * m, until none is left (nil stays nil).
func (t *tr) recombine(p poly) poly {
	for p != nil {
		q, ok := t.recombineOnce(p)
		if !ok {
			return p
		}
		p = q
	}
	return nil
}

func (t *tr) recombineOnce(p poly) (poly, bool) {
	for key, c := range p {
		atoms := monomial(key)
		for i, at := range atoms {
			info, ok := t.divs[at.key()]
			if !ok || !info.rem || !strings.HasPrefix(at.name, "_c_rem(") {
				continue
			}
			quot := atom{at.kind, "_c_div(" + strings.TrimPrefix(at.name, "_c_rem(")}
			if _, ok := t.divs[quot.key()]; !ok {
				continue
			}
			bKey, bCoef, ok := singleTerm(info.b)
			if !ok {
				continue
			}
			rest := monomialKey(append(append([]atom(nil), atoms[:i]...), atoms[i+1:]...))
			qTerm := mulKey(mulKey(quot.key(), bKey), rest)
			if qTerm == key || p[qTerm] != c*bCoef {
				continue
			}
			out := p.add(poly{key: c, qTerm: c * bCoef}, -1)
			return out.add(info.a.mul(poly{rest: c}), 1), true
		}
	}
	return nil, false
}

// singleTerm is p as coefficient * monomial (ok false for a sum or zero).
func singleTerm(p poly) (string, int64, bool) {
	if len(p) != 1 {
		return "", 0, false
	}
	for k, v := range p {
		return k, v, true
	}
	return "", 0, false
}

// threadFree reports whether p is the same for every thread: no index
// variable, no per-thread or data sub-expression.
func threadFree(p poly) bool {
	if p == nil {
		return false
	}
	for k := range p {
		for _, a := range monomial(k) {
			if a.kind == atomVar || a.kind == atomVarying {
				return false
			}
		}
	}
	return true
}

// loopAddress is how a padded draft reads a load inside runtime loops.
type loopAddress int

const (
	loopGathered loopAddress = iota // one gathered block per iteration (_gather_loop)
	loopUniform                     // one element per iteration, an SMEM scalar (_take_each)
	loopShifted                     // the element's own position plus an offset per iteration (_halo, _shifted)
)

// loopAddressOf classes a loop load of the padded layout, whose own flat
// position is flat.
func (m *ewMode) loopAddressOf(t *tr, l ewAccess, flat poly) loopAddress {
	prm := t.params[l.param]
	if prm == nil || (prm.DType != "float32" && prm.DType != "int32") {
		return loopGathered
	}
	p := t.recombine(l.idx.poly)
	switch {
	case threadFree(p):
		return loopUniform
	case threadFree(t.recombine(p.add(flat, -1))):
		return loopShifted
	}
	return loopGathered
}

// classifyLoopLoads classes every load of the padded draft (loopGathered
// for those outside runtime loops).
func (m *ewMode) classifyLoopLoads(t *tr, flat poly) []loopAddress {
	kinds := make([]loopAddress, len(m.loads))
	for i, l := range m.loads {
		if len(l.loops) > 0 {
			kinds[i] = m.loopAddressOf(t, l, flat)
		}
	}
	return kinds
}

// shiftReads rewrites the kernel's per-iteration reads of the shifted
// loads (a block of the per-iteration gather) as shifts of their halo
// block, and returns the offset tuples' names the kernel now takes.
func (m *ewMode) shiftReads(body []string, kinds []loopAddress) ([]string, []string) {
	var offs []string
	for i, l := range m.loads {
		if kinds[i] != loopShifted {
			continue
		}
		it := loopIndexPy(l.loops)
		from := l.name + "_ref[" + it + "]"
		to := fmt.Sprintf("_shifted(%s_ref, %s_offs[%s], SHAPE)", l.name, l.name, it)
		for j, line := range body {
			body[j] = strings.ReplaceAll(line, from, to)
		}
		offs = append(offs, l.name+"_offs")
	}
	return body, offs
}

// writeWindowAddresses writes the wrapper's iteration addresses of the
// uniform and shifted loads: ADDR, one list per such load in order, each
// address at the domain's first element (d = 0), which for a shifted load
// is its offset from the element's own position (flat is 0 there); and
// each shifted load's offsets into its halo block (rows: of _row_halo's
// rows, whole tiles of sub rows).
func (m *ewMode) writeWindowAddresses(ww func(string, ...any), kinds []loopAddress, dims []string, ext map[string]val, rows bool, sub int) {
	var lists []string
	for i, l := range m.loads {
		if kinds[i] != loopGathered {
			lists = append(lists, fmt.Sprintf("[%s %s]", l.idx.py, loopComprehension(l.loops)))
		}
	}
	if len(lists) == 0 {
		return
	}
	ww("")
	ww("    def _window_addresses(d):")
	writeIndexVars(ww, "        ", dims, ext)
	ww("        return [%s]", strings.Join(lists, ", "))
	ww("")
	ww("    ADDR = _window_addresses(0)")
	j := 0
	for i, l := range m.loads {
		if kinds[i] == loopGathered {
			continue
		}
		switch {
		case kinds[i] == loopShifted && rows:
			ww("    %s_offs = _row_halo_offsets(ADDR[%d], LANES, %d) if OWN else _halo_offsets(ADDR[%d], LANES)", l.name, j, sub, j)
		case kinds[i] == loopShifted:
			ww("    %s_offs = _halo_offsets(ADDR[%d], LANES)", l.name, j)
		}
		j++
	}
}

// windowIn is a uniform or shifted load's kernel input (the j-th list of
// ADDR) and its BlockSpec, the load being ins[k]; rows: the draft runs over
// the arrays' own rows (rowView), sub the sublane tile.
func windowIn(l ewAccess, kind loopAddress, j, k int, rows bool, sub int) (in, spec string) {
	if kind == loopUniform {
		return fmt.Sprintf("_take_each(p_%s, ADDR[%d])", l.param, j), "pl.BlockSpec(memory_space=pltpu.SMEM)"
	}
	spec = fmt.Sprintf("pl.BlockSpec((pl.Element(ins[%d].shape[0] - PROWS + BROWS), pl.Element(LANES)), lambda i: (i * BROWS, 0))", k)
	if rows {
		return fmt.Sprintf("_row_halo(p_%s, ADDR[%d], PROWS, LANES, %d) if OWN else _halo(p_%s, ADDR[%d], DP, LANES)", l.param, j, sub, l.param, j), spec
	}
	return fmt.Sprintf("_halo(p_%s, ADDR[%d], DP, LANES)", l.param, j), spec
}

// rowView reports whether a window draft may run over its arrays' own
// rows, with the row width and the arrays' shape: every store writes the element's own position
// of an array of one shape S (rank 2 or more) once, unmasked, and every
// load is a shifted read of an array of shape S, a uniform read, or the
// element's own position of an array of shape S outside the loops. The
// view (prod(S[:-1]), S[-1]) is then the flat domain in rows of S[-1]
// (each shifted read a row offset and a lane rotation, as in the flat
// layout) and, where XLA keeps the array in those rows (_own_rows, at run
// time: else the flat blocks), a bitcast of it: no relayout of the array
// into the flat blocks and back (window_clamp at (2, 40, 129): 2.1x ->
// 1.01x of the layout minimum on v6e).
func (m *ewMode) rowView(t *tr, kinds []loopAddress, flat, size poly) (lanes, shapePy string, ok bool) {
	if m.gathers() || m.anyLoopStore() || !slices.Contains(kinds, loopShifted) {
		return "", "", false
	}
	var shape []string
	sameShape := func(p *kernels.Param) bool {
		if p == nil || len(p.Shape) < 2 || !paramSize(p).equal(size) {
			return false
		}
		if shape == nil {
			shape = p.Shape
		}
		return slices.EqualFunc(shape, p.Shape, func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) })
	}
	count := map[string]int{}
	for _, s := range m.stores {
		count[s.param]++
	}
	for _, s := range m.stores {
		if count[s.param] != 1 || !isTrue(s.mask) || !s.idx.poly.equal(flat) || !sameShape(t.params[s.param]) {
			return "", "", false
		}
	}
	for i, l := range m.loads {
		switch {
		case kinds[i] == loopUniform:
		case kinds[i] == loopShifted:
			if !sameShape(t.params[l.param]) {
				return "", "", false
			}
		case len(l.loops) == 0 && !l.gather && l.idx.poly.equal(flat) && sameShape(t.params[l.param]):
		default:
			return "", "", false
		}
	}
	return exprPyString(shape[len(shape)-1]), t.shapePy(t.params[m.stores[0].param]), true
}

// pruneIndexLines drops the wrapper's index lines wrap[from:to] (d and the
// index variables) that no later line reads: a draft whose loads all moved
// into the kernel (uniform and shifted loads) computes no index array.
func pruneIndexLines(wrap []string, from, to int) []string {
	var live []string
	for _, l := range wrap[to:] {
		live = append(live, pyIdents(l)...)
	}
	kept := pruneDead(append([]string(nil), wrap[from:to]...), live...)
	return append(append(append([]string(nil), wrap[:from]...), kept...), wrap[to:]...)
}
