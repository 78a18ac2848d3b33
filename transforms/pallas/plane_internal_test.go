package pallas

import "testing"

// TestAffineIn: max pooling's address, (z * ih + y * s + h) * iw + x * s +
// w over loop variables h and w, is affine in (x, y, z) with steps no loop
// variable reads (a plane read); a step that moves with an iteration, a
// product of two coordinates, a position taken apart by / and % or loaded
// data is not.
func TestAffineIn(t *testing.T) {
	x, y, z := pvar("x"), pvar("y"), pvar("z")
	ih, iw, s := pparam("ih"), pparam("iw"), pparam("s")
	h, w := popaque("lv0", kUniform), popaque("lv1", kUniform)
	loops := []*rtLoop{{lv: "lv0"}, {lv: "lv1"}}
	dims := []string{"z", "y", "x"}
	pool := z.mul(ih).add(y.mul(s), 1).add(h, 1).mul(iw).add(x.mul(s), 1).add(w, 1)
	if !affineIn(pool, dims, loops) {
		t.Fatalf("%v: want affine", pool)
	}
	for name, p := range map[string]poly{
		"step read by a loop variable": pool.add(x.mul(h), 1),
		"two coordinates":              pool.add(x.mul(y), 1),
		"a thread-varying atom":        pool.add(popaque("_c_rem(iv_x, 7, jnp.int32)", kIndex), 1),
		"loaded data":                  pool.add(popaque("ld1", kData), 1),
		"a coordinate not in dims":     pool.add(pvar("t"), 1),
	} {
		if affineIn(p, dims, loops) {
			t.Errorf("%s: %v taken as affine", name, p)
		}
	}
	if affineIn(nil, dims, loops) {
		t.Errorf("nil poly taken as affine")
	}
}
