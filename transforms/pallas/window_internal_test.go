package pallas

import "testing"

// TestRecombineOwnPosition: a flat position taken apart into (n, h, w) by
// / and % and put back together with a window offset, (n * height + h + dy)
// * width + w + dx, is the position plus dy * width + dx (a shifted read);
// the same with a factor the quotient does not carry is not.
func TestRecombineOwnPosition(t *testing.T) {
	tr := &tr{}
	x := val{py: "iv_x", k: kIndex, poly: pvar("x")}
	width := val{py: "width", k: kUniform, poly: pparam("width")}
	height := val{py: "height", k: kUniform, poly: pparam("height")}
	div := func(a, b val, rem bool) val {
		fn := "_c_div"
		if rem {
			fn = "_c_rem"
		}
		py := fn + "(" + a.py + ", " + b.py + ", jnp.int32)"
		v := val{py: py, k: kIndex, poly: popaque(py, kIndex)}
		tr.noteDivRem(v, a, b, rem)
		return v
	}
	w := div(x, width, true)
	q := div(x, width, false)
	h := div(q, height, true)
	n := div(q, height, false)
	dy, dx := popaque("lv0", kUniform), popaque("lv1", kUniform)
	addr := n.poly.mul(height.poly).add(h.poly, 1).add(dy, 1).mul(width.poly).add(w.poly, 1).add(dx, 1)
	got := tr.recombine(addr)
	want := x.poly.add(dy.mul(width.poly), 1).add(dx, 1)
	if !got.equal(want) {
		t.Fatalf("recombined %v, want %v", got, want)
	}
	if !threadFree(got.add(x.poly, -1)) || threadFree(got) {
		t.Fatalf("offset of %v from x: want thread-free, the address itself not", got)
	}
	// (n * height * 5 + h) * width + w: n's term is not h's partner
	other := n.poly.mul(height.poly).mul(pconst(5)).add(h.poly, 1).mul(width.poly).add(w.poly, 1)
	if threadFree(tr.recombine(other).add(x.poly, -1)) {
		t.Fatalf("%v recombined to a shift of x", other)
	}
}
