package pallas

import "testing"

// TestCallArg: a store's value loses a rounding _f16 or parentheses around
// all of it, never around part of it.
func TestCallArg(t *testing.T) {
	for _, c := range []struct{ s, fn, want string }{
		{"_f16(a * b)", "_f16", "a * b"},
		{"_f16(_f16(a) + _f16(b))", "_f16", "_f16(a) + _f16(b)"},
		{"_f16(a) + _f16(b)", "_f16", "_f16(a) + _f16(b)"},
		{"_f16x(a)", "_f16", "_f16x(a)"},
		{"((x * s) + bias)", "", "(x * s) + bias"},
		{"(a) + (b)", "", "(a) + (b)"},
		{"x", "", "x"},
	} {
		if got := callArg(c.s, c.fn); got != c.want {
			t.Errorf("callArg(%q, %q) = %q, want %q", c.s, c.fn, got, c.want)
		}
	}
}
