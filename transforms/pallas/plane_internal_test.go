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

// TestPlaneZFree: a kernel whose body reads only the x and y coordinates
// may run once per plane of a block; one that reads z, d, the row or the
// program id (directly or through q_y) may not, nor a domain without z.
func TestPlaneZFree(t *testing.T) {
	index := []string{
		"    SHAPE = output_ref.shape",
		"    ROW = pl.program_id(0) * SHAPE[0] + lax.broadcasted_iota(jnp.int32, SHAPE, 0)",
		"    d = ROW * SHAPE[1] + lax.broadcasted_iota(jnp.int32, SHAPE, 1)",
		"    iv_x = _c_rem(d, E_x, jnp.int32)",
		"    q_x = _c_div(d, E_x, jnp.int32)",
		"    iv_y = _c_rem(q_x, E_y, jnp.int32)",
	}
	zyx := []string{"z", "y", "x"}
	body := func(lines ...string) []string { return append(append([]string{}, index...), lines...) }
	for _, c := range []struct {
		name string
		body []string
		dims []string
		want bool
	}{
		{"x and y only", body("    v = iv_x * 2 + iv_y", "    output_ref[...] = v"), zyx, true},
		{"z through q_y", body("    q_y = _c_div(q_x, E_y, jnp.int32)", "    iv_z = q_y", "    output_ref[...] = iv_z"), zyx, false},
		{"the flat index", body("    output_ref[...] = d * 1.0"), zyx, false},
		{"the row", body("    output_ref[...] = ROW * 1.0"), zyx, false},
		{"the program id", body("    output_ref[...] = pl.program_id(0) + iv_x"), zyx, false},
		{"a 2-D domain", body("    output_ref[...] = iv_x"), []string{"y", "x"}, false},
	} {
		if got := planeZFree(c.body, c.dims); got != c.want {
			t.Errorf("%s: planeZFree = %v, want %v", c.name, got, c.want)
		}
	}
}
