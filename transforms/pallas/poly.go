package pallas

import (
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// poly is an integer polynomial over atoms (index variables, size symbols,
// opaque sub-expressions): monomial key ("a*b", "" for the constant) to
// coefficient. It decides whether an access is the identity on the domain.
type poly map[string]int64

func pconst(c int64) poly {
	if c == 0 {
		return poly{}
	}
	return poly{"": c}
}

func patom(a string) poly { return poly{a: 1} }

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
	var parts []string
	if a != "" {
		parts = append(parts, strings.Split(a, "*")...)
	}
	if b != "" {
		parts = append(parts, strings.Split(b, "*")...)
	}
	sort.Strings(parts)
	return strings.Join(parts, "*")
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
		return patom("s:" + e.Name)
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
	return patom("o:" + e.String())
}

func constEval(e *kernels.Expr) (int64, bool) {
	if len(e.Symbols()) > 0 {
		return 0, false
	}
	v, err := e.Eval(nil)
	return v, err == nil
}
