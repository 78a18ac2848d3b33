package kernels

import (
	"strings"
	"testing"
)

func TestExprParsePrint(t *testing.T) {
	cases := []struct{ in, out string }{
		{"n", "n"},
		{"(n + 255) / 256", "(n + 255) / 256"},
		{"n+255/256", "n + 255 / 256"},
		{"min((n + 255) / 256, 80)", "min((n + 255) / 256, 80)"},
		{"a - (b - c)", "a - (b - c)"},
		{"(a - b) - c", "a - b - c"},
		{"2 * 256 * 4", "2 * 256 * 4"},
		{"n % 16 == 0 && m >= 1", "n % 16 == 0 && m >= 1"},
		{"-3 + n", "-3 + n"},
		{"max(a, b) * (c + 1)", "max(a, b) * (c + 1)"},
	}
	for _, c := range cases {
		e, err := ParseExpr(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if e.String() != c.out {
			t.Errorf("%q printed %q, want %q", c.in, e.String(), c.out)
		}
		if back, err := ParseExpr(e.String()); err != nil || !Equivalent(back, e) {
			t.Errorf("%q does not round-trip", c.in)
		}
	}
	for _, bad := range []string{"", "n +", "(n", "f(n)", "min(n)", "n $ 2", "1 2"} {
		if _, err := ParseExpr(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestExprEval(t *testing.T) {
	env := map[string]int64{"n": -7, "m": 2}
	for in, want := range map[string]int64{"n / m": -3, "n % m": -1, "min(n, m)": -7, "max(n, m)": 2, "m >= 1 && n < 0": 1, "(n + 9) / m": 1} {
		e, _ := ParseExpr(in)
		got, err := e.Eval(env)
		if err != nil || got != want {
			t.Errorf("%s = %d (%v), want %d", in, got, err, want)
		}
	}
	e, _ := ParseExpr("n / (m - 2)")
	if _, err := e.Eval(env); err == nil {
		t.Errorf("division by zero not reported")
	}
	e, _ = ParseExpr("k")
	if _, err := e.Eval(env); err == nil {
		t.Errorf("unbound symbol not reported")
	}
}

func TestCeilDivNormalForm(t *testing.T) {
	if got := CeilDiv(Sym("n"), Lit(256)).String(); got != "(n + 255) / 256" {
		t.Errorf("CeilDiv = %q", got)
	}
	if got := Bin("-", Bin("+", Sym("n"), Bin("*", Lit(2), Lit(128))), Lit(1)).String(); got != "n + 255" {
		t.Errorf("fold = %q", got)
	}
	if got := CeilDiv(Lit(1000), Lit(256)).String(); got != "4" {
		t.Errorf("constant ceil-div = %q", got)
	}
}

func TestEquivalent(t *testing.T) {
	p := func(s string) *Expr {
		e, err := ParseExpr(s)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	yes := [][2]string{{"2 * 256 * 4", "2048"}, {"cols * 4 <= 49152", "cols <= 12288"}, {"(n + 511) / 512", "(n + 2 * 256 - 1) / 512"}, {"a * b", "b * a"}}
	no := [][2]string{{"(n + 255) / 256", "n / 256"}, {"cols * 4 <= 49152", "cols <= 12287"}, {"m", "n"}, {"min(n, 80)", "n"}}
	for _, c := range yes {
		if !Equivalent(p(c[0]), p(c[1])) {
			t.Errorf("%s ≢ %s", c[0], c[1])
		}
	}
	for _, c := range no {
		if Equivalent(p(c[0]), p(c[1])) {
			t.Errorf("%s ≡ %s", c[0], c[1])
		}
	}
}

// TestParseExprBounded: an expression from hostile code — parentheses nested
// a million deep, a million unary minuses, a sum of a million terms — is
// refused with an error instead of recursing without bound (issue 32: a deep
// enough nesting overflowed Go's stack, a crash no recover catches).
func TestParseExprBounded(t *testing.T) {
	n := 1 << 20
	for name, s := range map[string]string{
		"parens": strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"minus":  strings.Repeat("-", n) + "1",
		"sum":    "1" + strings.Repeat("+n", n),
	} {
		if _, err := ParseExpr(s); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	if e, err := ParseExpr(strings.Repeat("(", 100) + "n+1" + strings.Repeat(")", 100)); err != nil || e.String() != "n + 1" {
		t.Errorf("ordinary nesting: %v %v", e, err)
	}
}
