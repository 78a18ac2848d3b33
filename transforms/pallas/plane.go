package pallas

import (
	"fmt"
	"slices"
	"strings"
)

// Window loads whose address is affine in the thread's coordinates (max
// pooling: input[(c * ih + y * s + h) * iw + x * s + w]) are gathered per
// iteration by the padded draft: one XLA gather of the whole domain per
// window position, k * k reads of the source (v6e bytes accessed 74x the
// layout minimum on maxpool_loop). Such a load can instead read its source
// plane from VMEM: a grid step per plane (the z coordinate), the output
// block the plane's (y, x) domain, the window's rows r + sy * y by a
// sublane-strided load and its columns c + sx * x by a strided load of the
// rows' transpose (Mosaic has no lane-strided loads, and strided loads
// only from a buffer whose last dim is 128: _strided_rows copies 128-lane
// chunks into one). The source is then read from HBM once.
//
// The affine shape is decided here on the address's polynomial; sizes and
// the per-iteration offsets are known only when the draft is traced, so
// the wrapper decides there (_plane) whether every read stays inside its
// plane, the plane is an array's last two dims and the buffers fit VMEM;
// when not, the draft gathers per iteration as before.

// planeLoad is the index of the one load that reads its source plane
// from VMEM, or -1: the draft's only load, inside runtime loops, of a
// float32 array, at an address affine in the x, y (and z) coordinates;
// every store the thread's own position of a float32 output, once (an
// output whose size is not the domain's by its spec's shape is checked
// when traced: writePlaneCall).
func (m *ewMode) planeLoad(t *tr, kinds []loopAddress, flat poly, dims []string) int {
	if len(m.loads) != 1 || kinds[0] != loopGathered || len(m.loads[0].loops) == 0 || m.gathers() || m.anyLoopStore() {
		return -1
	}
	if !strings.Contains(strings.Join(dims, ","), "y,x") {
		return -1
	}
	l := m.loads[0]
	if prm := t.params[l.param]; prm == nil || prm.DType != "float32" {
		return -1
	}
	count := map[string]int{}
	for _, s := range m.stores {
		count[s.param]++
	}
	for _, s := range m.stores {
		prm := t.params[s.param]
		if prm == nil || prm.DType != "float32" || count[s.param] != 1 || !isTrue(s.mask) || !s.idx.poly.equal(flat) {
			return -1
		}
	}
	if !affineIn(t.recombine(l.idx.poly), dims, l.loops) {
		return -1
	}
	return 0
}

// affineIn reports whether p is a sum of terms each thread-free or one
// coordinate of dims times a thread-free coefficient that no loop
// variable of loops reads (the same step for every iteration).
func affineIn(p poly, dims []string, loops []*rtLoop) bool {
	if p == nil || p.hasData() {
		return false
	}
	for key := range p {
		vars := 0
		var rest []string
		for _, a := range monomial(key) {
			switch {
			case a.kind == atomVar && containsStr(dims, a.name):
				vars++
			case a.kind == atomVar || a.kind == atomVarying:
				return false
			default:
				rest = append(rest, a.name)
			}
		}
		if vars > 1 {
			return false
		}
		if vars == 1 {
			for _, lp := range loops {
				if readsName(rest, lp.lv) {
					return false
				}
			}
		}
	}
	return true
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// planeReads rewrites the kernel's per-iteration reads of load j (lines
// "v = <load>_ref[<iteration>]") as _window_read, which returns the row
// offset it leaves staged (the kernel carries it from read to read), after
// _plane_stage below the kernel's index lines; it returns the name of the
// kernel parameter that says whether the plane form runs, or ok false
// where a read is not such a line.
func (m *ewMode) planeReads(body []string, j int) ([]string, string, bool) {
	l := m.loads[j]
	it := loopIndexPy(l.loops)
	ref := l.name + "_ref[" + it + "]"
	held := l.name + "_held"
	out := slices.Clone(body)
	at := 0
	for i, line := range out {
		if strings.HasPrefix(line, "    d = ") {
			at = i + 1
		}
		if !strings.Contains(line, ref) {
			continue
		}
		lhs, rhs, ok := strings.Cut(strings.TrimSpace(line), " = ")
		if !ok || rhs != ref || !isName(lhs) {
			return body, "", false
		}
		ind := line[:len(line)-len(strings.TrimLeft(line, " "))]
		out[i] = fmt.Sprintf("%s%s, %s = _window_read(%s_ref, scratch, %s_plane, %s, SHAPE, %s)", ind, lhs, held, l.name, l.name, it, held)
	}
	stage := fmt.Sprintf("    %s = _plane_stage(%s_ref, scratch, %s_plane)", held, l.name, l.name)
	return slices.Insert(out, at, stage), l.name + "_plane", true
}

// writePlaneCall writes the wrapper's plane form of load j: the load's
// addresses at the domain's first element and one step along x, y and z
// (_plane derives the strides and offsets from them), and, where _plane
// finds the form applies (and each output has the domain's size), the
// kernel over the planes, each array read and written in the order of
// its dims XLA keeps it in (_plane_layout: a plane's rows or columns
// minor, the planes' index major or, for a 3-D array, second-minor, so no
// relayout surrounds the kernel); zfree says the kernel reads no
// coordinate but x and y, so a block of several planes may run it once
// per plane.
func (m *ewMode) writePlaneCall(t *tr, ww func(string, ...any), j int, dims []string, ext map[string]val, size poly, kw []string, zfree bool) {
	l := m.loads[j]
	ez := "1"
	if containsStr(dims, "z") {
		ez = "E_z"
	}
	ww("")
	ww("    def _plane_addresses(d):")
	writeIndexVars(ww, "        ", dims, ext)
	ww("        return [%s %s]", l.idx.py, loopComprehension(l.loops))
	ww("")
	ww("    %s_plane = _plane(p_%s.shape, [_plane_addresses(v) for v in (0, 1, E_x, E_x * E_y)], (%s, E_y, E_x))", l.name, l.param, ez)
	// an output the spec sizes apart from the domain: the form writes
	// only the domain, so it runs where the two are equal
	cond := l.name + "_plane is not None"
	for _, s := range m.stores {
		if prm := t.params[s.param]; !paramSize(prm).equal(size) {
			cond += fmt.Sprintf(" and D == _numel(%s)", t.shapePy(prm))
		}
	}
	ww("    if %s:", cond)
	var oshapes, structs, specs []string
	for i, s := range m.stores {
		prm := t.params[s.param]
		oshapes = append(oshapes, t.shapePy(prm))
		structs = append(structs, fmt.Sprintf("_plane_struct(%s_layout, %d, (%s, E_y, E_x), %s)", l.name, i+1, ez, t.blockType(prm)))
		specs = append(specs, fmt.Sprintf("_plane_spec(%s_layout, %d, (E_y, E_x))", l.name, i+1))
	}
	py := "False"
	if zfree {
		py = "True"
	}
	ww("        %s_layout = _plane_layout(p_%s.shape, [%s], (%s, E_y, E_x), %s)", l.name, l.param, strings.Join(oshapes, ", "), ez, py)
	plane := fmt.Sprintf("p_%s.shape[-2:]", l.param)
	ww("        outs = pl.pallas_call(")
	ww("            _plane_kernel(%s, %s_layout),", partialKernel(kw), l.name)
	ww("            grid=_plane_grid(%s_layout, %s)[0],", l.name, ez)
	ww("            in_specs=[_plane_spec(%s_layout, 0, %s)],", l.name, plane)
	ww("            out_specs=[%s],", strings.Join(specs, ", "))
	ww("            out_shape=[%s],", strings.Join(structs, ", "))
	ww("            scratch_shapes=_plane_scratch(%s, E_y, p_%s.dtype),", plane, l.param)
	ww("            compiler_params=pltpu.CompilerParams(dimension_semantics=_plane_grid(%s_layout, %s)[1]),", l.name, ez)
	ww("            interpret=interpret,")
	ww("        )(_plane_array(p_%s, %s_layout))", l.param, l.name)
	var res []string
	for i, s := range m.stores {
		res = append(res, fmt.Sprintf("%q: _plane_result(outs[%d], %s_layout, %d, %s)", s.param, i, l.name, i+1, oshapes[i]))
	}
	ww("        return {%s}", strings.Join(res, ", "))
}

// planeZFree reports whether a plane kernel's body (its index lines
// aside: the block's shape, row, d and the x and y coordinates) reads no
// coordinate of the domain but x and y: the kernel then computes each
// plane alike, wherever the plane lies in the grid.
func planeZFree(body, dims []string) bool {
	if strings.Join(dims, ",") != "z,y,x" {
		return false
	}
	for _, line := range body {
		lhs, rhs, _ := strings.Cut(strings.TrimSpace(line), " = ")
		switch lhs {
		case "SHAPE", "ROW", "d", "iv_x", "q_x":
			continue
		case "iv_y":
			if rhs == "_c_rem(q_x, E_y, jnp.int32)" {
				continue
			}
		}
		if strings.Contains(line, "program_id") || readsName([]string{line}, "ROW") || readsName([]string{line}, "d") ||
			readsName([]string{line}, "q_x") || readsName([]string{line}, "q_y") || readsName([]string{line}, "iv_z") {
			return false
		}
	}
	return true
}
