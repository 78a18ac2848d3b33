package pallas

import (
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// poly is an integer polynomial over atoms: monomial key (its atoms' keys,
// sorted, joined by monoSep, which no Python text holds; "" for the
// constant) to coefficient. It decides
// whether an access is the identity on the domain. Atoms are typed (see
// atom); a key is only built by atom.key and read back by monomial.
type poly map[string]int64

// atomKind says what an atom of a poly stands for.
type atomKind byte

const (
	atomVar     atomKind = 'v' // an index variable: x, y, z (global index), t (thread), b (block), j (row loop), s (tree stride)
	atomSize    atomKind = 's' // a size symbol of the spec
	atomParam   atomKind = 'p' // a scalar parameter of the kernel
	atomOpaque  atomKind = 'o' // a sub-expression the same for every thread, kept as its Python text
	atomVarying atomKind = 'd' // a sub-expression of the thread's position, kept as its Python text
	atomData    atomKind = 'D' // a loaded value or a sub-expression of loaded data, kept as its Python text
)

// atom is one factor of a monomial.
type atom struct {
	kind atomKind
	name string
}

func (a atom) key() string { return string(a.kind) + ":" + a.name }

// monomial reads a poly key back as its atoms (none for the constant).
func monomial(key string) []atom {
	if key == "" {
		return nil
	}
	parts := strings.Split(key, monoSep)
	out := make([]atom, len(parts))
	for i, k := range parts {
		out[i] = atom{kind: atomKind(k[0]), name: k[2:]}
	}
	return out
}

func monomialKey(atoms []atom) string {
	keys := make([]string, len(atoms))
	for i, a := range atoms {
		keys[i] = a.key()
	}
	sort.Strings(keys)
	return strings.Join(keys, monoSep)
}

// monoSep joins a monomial's atoms: an opaque atom's Python text may hold "*".
const monoSep = "\x1f"

func pconst(c int64) poly {
	if c == 0 {
		return poly{}
	}
	return poly{"": c}
}

func patom(a atom) poly { return poly{a.key(): 1} }

// pvar is the index variable name; varKey its monomial key.
func pvar(name string) poly { return patom(atom{atomVar, name}) }

func varKey(name string) string { return atom{atomVar, name}.key() }

func psize(name string) poly { return patom(atom{atomSize, name}) }

func pparam(name string) poly { return patom(atom{atomParam, name}) }

// popaque is a sub-expression the polynomial does not look into: uniform
// (k == kUniform), varying with the thread, or with the data.
func popaque(py string, k kind) poly {
	switch k {
	case kUniform:
		return patom(atom{atomOpaque, py})
	case kData:
		return patom(atom{atomData, py})
	}
	return patom(atom{atomVarying, py})
}

// hasData reports whether a monomial of p reads loaded data.
func (p poly) hasData() bool {
	for k := range p {
		for _, a := range monomial(k) {
			if a.kind == atomData {
				return true
			}
		}
	}
	return false
}

func (p poly) add(q poly, sign int64) poly {
	if p == nil || q == nil {
		return nil
	}
	r := poly{}
	for k, v := range p {
		r[k] += v
	}
	for k, v := range q {
		r[k] += sign * v
	}
	for k, v := range r {
		if v == 0 {
			delete(r, k)
		}
	}
	return r
}

func mulKey(a, b string) string {
	return monomialKey(append(monomial(a), monomial(b)...))
}

func (p poly) mul(q poly) poly {
	if p == nil || q == nil {
		return nil
	}
	r := poly{}
	for k1, v1 := range p {
		for k2, v2 := range q {
			r[mulKey(k1, k2)] += v1 * v2
		}
	}
	for k, v := range r {
		if v == 0 {
			delete(r, k)
		}
	}
	return r
}

func (p poly) constant() (int64, bool) {
	if p == nil {
		return 0, false
	}
	for k := range p {
		if k != "" {
			return 0, false
		}
	}
	return p[""], true
}

func (p poly) equal(q poly) bool {
	if p == nil || q == nil || len(p) != len(q) {
		return false
	}
	for k, v := range p {
		if q[k] != v {
			return false
		}
	}
	return true
}

// exprPoly converts a spec expression (over size symbols) to a poly; parts it
// cannot express become opaque atoms named by their text.
func exprPoly(e *kernels.Expr) poly {
	if e == nil {
		return nil
	}
	switch e.Op {
	case "lit":
		return pconst(e.Val)
	case "sym":
		return psize(e.Name)
	case "+":
		return exprPoly(e.L).add(exprPoly(e.R), 1)
	case "-":
		return exprPoly(e.L).add(exprPoly(e.R), -1)
	case "*":
		return exprPoly(e.L).mul(exprPoly(e.R))
	case "neg":
		return pconst(0).add(exprPoly(e.L), -1)
	}
	if c, ok := constEval(e); ok {
		return pconst(c)
	}
	return patom(atom{atomOpaque, e.String()})
}

func constEval(e *kernels.Expr) (int64, bool) {
	if len(e.Symbols()) > 0 {
		return 0, false
	}
	v, err := e.Eval(nil)
	return v, err == nil
}
