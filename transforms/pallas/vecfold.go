package pallas

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// foldVectors turns a float2/float4 kernel whose W components are computed
// alike into a scalar elementwise kernel over W times as many elements, so
// the draft reaches the arrays in place instead of gathering each component:
// every access is component c of vector i (element W*i + c), every
// component c of a stored vector is the same expression of component c of
// the loaded vectors (value numbering over the translated lines), and the
// kernel uses the thread index for nothing else. It reports whether it
// folded; ext["x"] becomes the element count.
func (m *ewMode) foldVectors(t *tr, dims []string, ext map[string]val) bool {
	if len(dims) != 1 || dims[0] != "x" || len(m.stores) == 0 {
		return false
	}
	w, ok := m.vectorWidth()
	if !ok {
		return false
	}
	for _, l := range t.lines {
		if reIndexName.MatchString(l) {
			return false // the index is used beyond addressing
		}
	}
	for _, s := range m.stores {
		if !isTrue(s.mask) {
			return false
		}
	}
	// one load per parameter: component c's name becomes component 0's
	rename := map[string]string{}
	first := map[string]string{}
	var loads []ewAccess
	for _, l := range m.loads {
		if _, seen := first[l.param]; !seen {
			first[l.param] = l.name
			loads = append(loads, l)
			continue
		}
		rename[l.name] = first[l.param]
	}
	lines, stored := valueNumber(t.lines, rename)
	// one store per parameter, when every component stores the same value
	firstStore := map[string]ewAccess{}
	var stores []ewAccess
	drop := map[string]bool{}
	for _, s := range m.stores {
		f, seen := firstStore[s.param]
		if !seen {
			firstStore[s.param] = s
			stores = append(stores, s)
			continue
		}
		if stored[s.name] == "" || stored[s.name] != stored[f.name] {
			return false
		}
		drop[s.name] = true
	}
	var out []string
	for _, l := range lines {
		if m := reStoreLine.FindStringSubmatch(l); m != nil && drop[m[1]] {
			continue
		}
		out = append(out, l)
	}
	e, ok := scaledExtent(t, ext["x"], w)
	if !ok {
		return false
	}
	own := val{py: "iv_x", ct: "int", k: kIndex, poly: pvar("x")}
	for i := range loads {
		loads[i].idx = own
	}
	for i := range stores {
		stores[i].idx = own
	}
	m.loads, m.stores, t.lines = loads, stores, out
	ext["x"] = e
	m.extent["x"] = e
	t.note("the float%d components are computed alike: drafted over the %d× as many scalar elements", w, w)
	return true
}

var (
	reIndexName = regexp.MustCompile(`\b(iv_[xyz]|d)\b`)
	reStoreLine = regexp.MustCompile(`^(st\d+)_ref\[\.\.\.\] = (.*)$`)
	reAssign    = regexp.MustCompile(`^([A-Za-z_]\w*) = (.*)$`)
	reWord      = regexp.MustCompile(`[A-Za-z_]\w*`)
)

// vectorWidth is W when every access is W*i + c with c in [0, W) and every
// parameter is accessed at each component once.
func (m *ewMode) vectorWidth() (int64, bool) {
	var w int64
	seen := map[string]map[int64]bool{}
	for _, a := range append(append([]ewAccess{}, m.loads...), m.stores...) {
		p := a.idx.poly
		if p == nil || len(p) > 2 {
			return 0, false
		}
		aw, c := p[varKey("x")], p[""]
		for k := range p {
			if k != varKey("x") && k != "" {
				return 0, false
			}
		}
		if aw != 2 && aw != 4 || w != 0 && aw != w || c < 0 || c >= aw {
			return 0, false
		}
		w = aw
		key := a.param + "/ld"
		if strings.HasPrefix(a.name, "st") {
			key = a.param + "/st"
		}
		if seen[key] == nil {
			seen[key] = map[int64]bool{}
		}
		if seen[key][c] {
			return 0, false
		}
		seen[key][c] = true
	}
	for _, cs := range seen {
		if int64(len(cs)) != w {
			return 0, false
		}
	}
	return w, w != 0
}

// valueNumber renames per rename, drops assignments whose right side an
// earlier line already computed (their names become the earlier one's) and
// returns the lines with each store's value as rewritten.
func valueNumber(lines []string, rename map[string]string) ([]string, map[string]string) {
	canon := map[string]string{}
	for k, v := range rename {
		canon[k] = v
	}
	sub := func(s string) string {
		return reWord.ReplaceAllStringFunc(s, func(w string) string {
			if c, ok := canon[w]; ok {
				return c
			}
			return w
		})
	}
	byRHS := map[string]string{}
	stored := map[string]string{}
	var out []string
	for _, l := range lines {
		if m := reStoreLine.FindStringSubmatch(l); m != nil {
			v := sub(m[2])
			stored[m[1]] = strings.ReplaceAll(v, m[1]+"_ref", "REF")
			out = append(out, m[1]+"_ref[...] = "+v)
			continue
		}
		if m := reAssign.FindStringSubmatch(l); m != nil {
			rhs := sub(m[2])
			if prev, ok := byRHS[rhs]; ok {
				canon[m[1]] = prev
				continue
			}
			byRHS[rhs] = m[1]
			out = append(out, m[1]+" = "+rhs)
			continue
		}
		out = append(out, sub(l))
	}
	return out, stored
}

// scaledExtent is W times the vector count e: its polynomial is the element
// count itself where e is a size parameter "X / W" and the spec's domain
// says X % W == 0 (the host checks it), else W*e.
func scaledExtent(t *tr, e val, w int64) (val, bool) {
	out := val{py: fmt.Sprintf("(%d * %s)", w, e.py), ct: "int", k: kUniform}
	if e.poly != nil {
		out.poly = e.poly.mul(pconst(w))
	}
	for _, p := range t.spec.Params {
		if p.Role != "size" || "p_"+p.Name != e.py || p.Expr == "" {
			continue
		}
		x, ok := strings.CutSuffix(strings.ReplaceAll(p.Expr, " ", ""), fmt.Sprintf("/%d", w))
		if !ok {
			continue
		}
		for _, c := range t.spec.Domain.Constraints {
			if strings.ReplaceAll(c, " ", "") == fmt.Sprintf("%s%%%d==0", x, w) {
				if ex, err := kernels.ParseExpr(x); err == nil {
					out.poly = exprPoly(ex)
				}
			}
		}
	}
	return out, out.poly != nil
}
