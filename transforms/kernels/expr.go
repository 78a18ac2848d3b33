package kernels

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Expr is an expression of the spec's C-integer grammar: integer literals,
// size symbols, + - * / % (truncating), min(a,b), max(a,b), comparisons and &&.
type Expr struct {
	Op   string // "lit", "sym", "+", "-", "*", "/", "%", "min", "max", "==", "!=", "<", "<=", ">", ">=", "&&", "neg"
	Val  int64
	Name string
	L, R *Expr
}

// Lit returns a literal.
func Lit(v int64) *Expr { return &Expr{Op: "lit", Val: v} }

// Sym returns a symbol.
func Sym(name string) *Expr { return &Expr{Op: "sym", Name: name} }

// Bin returns l op r, folded where both sides are literals and simplified for
// sums with literal parts.
func Bin(op string, l, r *Expr) *Expr {
	if l == nil || r == nil {
		return nil
	}
	if l.Op == "lit" && r.Op == "lit" {
		if v, ok := evalBin(op, l.Val, r.Val); ok {
			return Lit(v)
		}
	}
	switch op {
	case "+", "-":
		return simplifySum(&Expr{Op: op, L: l, R: r})
	case "*":
		if l.Op == "lit" && l.Val == 1 {
			return r
		}
		if r.Op == "lit" && r.Val == 1 {
			return l
		}
	case "/":
		if r.Op == "lit" && r.Val == 1 {
			return l
		}
	}
	return &Expr{Op: op, L: l, R: r}
}

// simplifySum flattens a chain of + and - and gathers its literal parts into
// one trailing constant: "n + 256 - 1" becomes "n + 255".
func simplifySum(e *Expr) *Expr {
	type term struct {
		e   *Expr
		neg bool
	}
	var terms []term
	var c int64
	var walk func(x *Expr, neg bool)
	walk = func(x *Expr, neg bool) {
		switch {
		case x.Op == "+":
			walk(x.L, neg)
			walk(x.R, neg)
		case x.Op == "-" && x.R != nil:
			walk(x.L, neg)
			walk(x.R, !neg)
		case x.Op == "lit":
			if neg {
				c -= x.Val
			} else {
				c += x.Val
			}
		default:
			terms = append(terms, term{x, neg})
		}
	}
	walk(e, false)
	var out *Expr
	for _, t := range terms {
		switch {
		case out == nil && t.neg:
			out = &Expr{Op: "-", L: Lit(0), R: t.e}
		case out == nil:
			out = t.e
		case t.neg:
			out = &Expr{Op: "-", L: out, R: t.e}
		default:
			out = &Expr{Op: "+", L: out, R: t.e}
		}
	}
	switch {
	case out == nil:
		return Lit(c)
	case c > 0:
		return &Expr{Op: "+", L: out, R: Lit(c)}
	case c < 0:
		return &Expr{Op: "-", L: out, R: Lit(-c)}
	}
	return out
}

// CeilDiv returns (a + b - 1) / b in the normal form used by specs.
func CeilDiv(a, b *Expr) *Expr {
	if a == nil || b == nil {
		return nil
	}
	return Bin("/", Bin("-", Bin("+", a, b), Lit(1)), b)
}

func evalBin(op string, a, b int64) (int64, bool) {
	bi := func(x bool) int64 {
		if x {
			return 1
		}
		return 0
	}
	switch op {
	case "+":
		return a + b, true
	case "-":
		return a - b, true
	case "*":
		return a * b, true
	case "/":
		if b == 0 {
			return 0, false
		}
		return a / b, true
	case "%":
		if b == 0 {
			return 0, false
		}
		return a % b, true
	case "min":
		return min(a, b), true
	case "max":
		return max(a, b), true
	case "==":
		return bi(a == b), true
	case "!=":
		return bi(a != b), true
	case "<":
		return bi(a < b), true
	case "<=":
		return bi(a <= b), true
	case ">":
		return bi(a > b), true
	case ">=":
		return bi(a >= b), true
	case "&&":
		return bi(a != 0 && b != 0), true
	}
	return 0, false
}

var precedence = map[string]int{"&&": 1, "==": 2, "!=": 2, "<": 3, "<=": 3, ">": 3, ">=": 3, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}

// String prints e in the spec grammar with minimal parentheses.
func (e *Expr) String() string {
	if e == nil {
		return ""
	}
	return e.str(0)
}

func (e *Expr) str(parent int) string {
	switch e.Op {
	case "lit":
		return strconv.FormatInt(e.Val, 10)
	case "sym":
		return e.Name
	case "min", "max":
		return e.Op + "(" + e.L.str(0) + ", " + e.R.str(0) + ")"
	case "neg":
		return "-" + e.L.str(6)
	}
	p := precedence[e.Op]
	s := e.L.str(p) + " " + e.Op + " " + e.R.str(p+1)
	if p < parent {
		return "(" + s + ")"
	}
	return s
}

// Eval evaluates e with C semantics for the given symbol values.
func (e *Expr) Eval(env map[string]int64) (int64, error) {
	switch e.Op {
	case "lit":
		return e.Val, nil
	case "sym":
		v, ok := env[e.Name]
		if !ok {
			return 0, fmt.Errorf("unbound symbol %q", e.Name)
		}
		return v, nil
	case "neg":
		v, err := e.L.Eval(env)
		return -v, err
	}
	a, err := e.L.Eval(env)
	if err != nil {
		return 0, err
	}
	b, err := e.R.Eval(env)
	if err != nil {
		return 0, err
	}
	v, ok := evalBin(e.Op, a, b)
	if !ok {
		return 0, fmt.Errorf("division by zero in %s", e)
	}
	return v, nil
}

// Symbols returns the sorted distinct symbols of e.
func (e *Expr) Symbols() []string {
	set := map[string]bool{}
	var walk func(*Expr)
	walk = func(x *Expr) {
		if x == nil {
			return
		}
		if x.Op == "sym" {
			set[x.Name] = true
		}
		walk(x.L)
		walk(x.R)
	}
	walk(e)
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Rename returns e with symbols renamed by m (others kept).
func (e *Expr) Rename(m map[string]string) *Expr {
	if e == nil {
		return nil
	}
	if e.Op == "sym" {
		if n, ok := m[e.Name]; ok {
			return Sym(n)
		}
		return e
	}
	c := *e
	c.L = e.L.Rename(m)
	c.R = e.R.Rename(m)
	return &c
}

// ParseExpr parses an expression of the spec grammar.
//
// An expression comes from a repository's code (a launch's grid, a size):
// one of more than maxExprTokens tokens or nested deeper than maxExprDepth is
// refused, so no walk over it (parse, Eval, String, ...) recurses without
// bound on hostile input.
func ParseExpr(s string) (*Expr, error) {
	p := &exprParser{toks: tokenize(s)}
	if p.toks == nil {
		return nil, fmt.Errorf("expression %q: unexpected character", s)
	}
	if len(p.toks) == 0 {
		return nil, errors.New("empty expression")
	}
	if len(p.toks) > maxExprTokens {
		return nil, fmt.Errorf("expression of %d tokens: longer than %d", len(p.toks), maxExprTokens)
	}
	e, err := p.parse(1)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", s, err)
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("expression %q: unexpected %q", s, p.toks[p.i])
	}
	return e, nil
}

func tokenize(s string) []string {
	toks := []string{}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		case isIdent(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		case strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "==") || strings.HasPrefix(s[i:], "!=") ||
			strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">="):
			toks = append(toks, s[i:i+2])
			i += 2
		case strings.ContainsRune("+-*/%()<>,", rune(c)):
			toks = append(toks, s[i:i+1])
			i++
		default:
			return nil
		}
	}
	return toks
}

// Bounds of a parsed expression (ParseExpr).
const (
	maxExprTokens = 4096
	maxExprDepth  = 256
)

type exprParser struct {
	toks  []string
	i     int
	depth int
}

func (p *exprParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *exprParser) parse(minPrec int) (*Expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxExprDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxExprDepth)
	}
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		prec, ok := precedence[op]
		if !ok || prec < minPrec {
			return l, nil
		}
		p.i++
		r, err := p.parse(prec + 1)
		if err != nil {
			return nil, err
		}
		l = &Expr{Op: op, L: l, R: r}
	}
}

func (p *exprParser) unary() (*Expr, error) {
	t := p.peek()
	switch {
	case t == "":
		return nil, errors.New("unexpected end")
	case t == "-":
		p.i++
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxExprDepth {
			return nil, fmt.Errorf("nested deeper than %d", maxExprDepth)
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if x.Op == "lit" {
			return Lit(-x.Val), nil
		}
		return &Expr{Op: "neg", L: x}, nil
	case t == "(":
		p.i++
		x, err := p.parse(1)
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, errors.New("missing )")
		}
		p.i++
		return x, nil
	case t[0] >= '0' && t[0] <= '9':
		p.i++
		v, err := strconv.ParseInt(strings.TrimRight(t, "uUlL"), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", t)
		}
		return Lit(v), nil
	case isIdent(t[0]):
		p.i++
		if (t == "min" || t == "max") && p.peek() == "(" {
			p.i++
			a, err := p.parse(1)
			if err != nil {
				return nil, err
			}
			if p.peek() != "," {
				return nil, fmt.Errorf("%s needs two arguments", t)
			}
			p.i++
			b, err := p.parse(1)
			if err != nil {
				return nil, err
			}
			if p.peek() != ")" {
				return nil, errors.New("missing )")
			}
			p.i++
			return &Expr{Op: t, L: a, R: b}, nil
		}
		if p.peek() == "(" {
			return nil, fmt.Errorf("unknown function %q", t)
		}
		return Sym(t), nil
	}
	return nil, fmt.Errorf("unexpected %q", t)
}

// Equivalent reports whether two expressions agree on a set of sample symbol
// assignments (symbols of both, values 1..4099 including primes and powers of
// two). It is how tests compare an inferred expression with a hand-written one.
func Equivalent(a, b *Expr) bool {
	if a == nil || b == nil {
		return a == b
	}
	syms := map[string]bool{}
	for _, s := range append(a.Symbols(), b.Symbols()...) {
		syms[s] = true
	}
	names := make([]string, 0, len(syms))
	for s := range syms {
		names = append(names, s)
	}
	sort.Strings(names)
	samples := []int64{1, 2, 3, 7, 16, 31, 32, 33, 64, 127, 128, 255, 256, 257, 1000, 1024, 1031, 4096, 4099, 65536, 1 << 20}
	var lits []int64
	collectLits(a, &lits)
	collectLits(b, &lits)
	for _, l := range lits {
		samples = append(samples, l-1, l, l+1)
		for _, m := range lits {
			if m > 0 {
				samples = append(samples, l/m, l/m+1)
			}
		}
	}
	var pos []int64
	for _, v := range samples {
		if v >= 1 {
			pos = append(pos, v)
		}
	}
	rounds := max(60, 3*len(pos))
	for round := 0; round < rounds; round++ {
		env := map[string]int64{}
		for i, s := range names {
			if i == 0 {
				env[s] = pos[round%len(pos)]
			} else {
				env[s] = pos[(round*(2*i+1)+i*7)%len(pos)]
			}
		}
		va, ea := a.Eval(env)
		vb, eb := b.Eval(env)
		if (ea != nil) != (eb != nil) || va != vb {
			return false
		}
	}
	return true
}

func collectLits(e *Expr, out *[]int64) {
	if e == nil || len(*out) > 16 {
		return
	}
	if e.Op == "lit" && e.Val > 0 && e.Val < 1<<40 {
		*out = append(*out, e.Val)
	}
	collectLits(e.L, out)
	collectLits(e.R, out)
}
