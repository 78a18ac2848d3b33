package pallas

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// In-kernel gathers (issue 11: bytes accessed within 1.25x of the minimum).
//
// A gather draft (points[idx[i]], softmax[i * classes + target[i]]) reads
// arrays at an index that is not the thread's own position: by a loaded
// value, or affinely (idx[b * m + i] in a (b, c, m) domain). The padded
// form has XLA gather those in the wrapper (_take, _gather), and the TPU
// compiler's cost of such a gather is the whole operand per index
// (gather_points: 1233x the layout minimum); its output is written in
// lane-dense rows and copied into the output's shape.
//
// When every output is written once at the thread's own position, the
// draft instead runs over the output in its own layout (_vview: leading
// dimensions merged, a column-major 2-D array as its transpose, a 1-D one in
// 128-lane rows), and each array read at another position comes into the
// kernel whole, once, as a VMEM block of the same kind of view (_vsrc,
// _vwhole), which the kernel gathers from with _vtake at the index it
// computes (the thread's index variables, the values it loaded). Reads at
// the thread's own position of an array shaped like the output read its
// block. No XLA gather, no relayout of the output: each array is read once
// and each output written once. When the gathered arrays do not fit the
// VMEM budget (_vfits) run() hands the call to the windowed form (_run_win,
// vwin.go: each grid step's reads in one block of each array) where the
// addresses depend on sizes only, and past its budget, or for a gather by
// value, to the padded form, kept in the module as _run_xla.
//
// The shared helper's contract, for other drafts that gather in the kernel:
// _vtake(src_ref, meta, idx, fill=None) is src's flat element idx for
// every position of a 2-D int32 block idx (its lanes a multiple of 128),
// exactly (per source row a lane gather inside one vreg and a select: no
// arithmetic on the values), fill where idx is outside [0, n) (NaN, as
// _take poisons an undefined CUDA read; 0x7E00 for float16 bits), idx
// clipped into it when fill is None (as _gather reads). src_ref is the
// whole-array block of (view, meta) = _vsrc(src), given by _vwhole(view);
// 16-bit elements come back widened to int32. Its work per index block
// is one lane gather and select per source row of 128 lanes, which _vfits
// bounds (512 KiB of 32-bit words in all, at most 4096 columns).

// gatherLoads are the loads of a gather draft that read another position
// than the thread's own in an array shaped like out, and every read inside
// a runtime loop (each iteration's element gathered in the kernel), by
// index in m.loads; ok is false when the draft does not qualify for the
// in-kernel form: neither a gather by value nor a loop's reads, a loop's
// read that loopGathers leaves to another form, an output written other
// than once at the thread's position, outputs of different shapes, an
// array gathered that _vsrc does not carry (bool, 8-bit or bfloat16
// elements).
func (m *ewMode) gatherLoads(t *tr, flat, size poly, dims []string) (vm map[int]bool, out *kernels.Param, ok bool) {
	loopReads, loopOK := m.loopGathers(t, flat, dims)
	if !loopOK || (!m.gathers() && !loopReads) {
		return nil, nil, false
	}
	count := map[string]int{}
	for _, s := range m.stores {
		count[s.param]++
	}
	for _, s := range m.stores {
		p := t.params[s.param]
		if out == nil {
			out = p
		}
		if len(s.loops) > 0 || count[s.param] != 1 || !isTrue(s.mask) || !s.idx.poly.equal(flat) ||
			!paramSize(p).equal(size) || !sameView(out, p) || len(p.Shape) == 0 {
			return nil, nil, false
		}
	}
	vm = map[int]bool{}
	for i, l := range m.loads {
		p := t.params[l.param]
		switch {
		case len(l.loops) > 0 && !vsrcType(p):
			return nil, nil, false
		case len(l.loops) > 0:
			vm[i] = true // each iteration's element, gathered in the kernel
		case !l.gather && l.idx.poly.equal(flat) && paramSize(p).equal(size) && sameView(out, p):
			// the thread's own element: the block at its position
		case !vsrcType(p):
			return nil, nil, false
		default:
			vm[i] = true
		}
	}
	return vm, out, true
}

// loopGathers reports whether the draft reads inside runtime loops (reads)
// and whether the in-kernel form may take those reads (ok): every such
// read is one the padded form gathers per iteration (_gather_loop), none a
// uniform or shifted read (the window forms read those from the array's
// own rows), the plane form does not take it, and no store is inside a
// loop.
func (m *ewMode) loopGathers(t *tr, flat poly, dims []string) (reads, ok bool) {
	kinds := m.classifyLoopLoads(t, flat)
	for i, l := range m.loads {
		if len(l.loops) == 0 {
			continue
		}
		reads = true
		if kinds[i] != loopGathered {
			return true, false
		}
	}
	if !reads {
		return false, true
	}
	return true, !m.anyLoopStore() && m.planeLoad(t, kinds, flat, dims) < 0
}

// sameView: a and b have the same shape and element width, so that _vview
// lays them out alike and one block spec reads both.
func sameView(a, b *kernels.Param) bool {
	if len(a.Shape) != len(b.Shape) || elemBytes(a) != elemBytes(b) {
		return false
	}
	for i := range a.Shape {
		if strings.TrimSpace(a.Shape[i]) != strings.TrimSpace(b.Shape[i]) {
			return false
		}
	}
	return true
}

// elemBytes is the width of p's elements in the kernel's blocks.
func elemBytes(p *kernels.Param) int {
	switch p.DType {
	case "float16", "bfloat16", "int16", "uint16":
		return 2
	case "int8", "uint8", "bool":
		return 1
	}
	return 4
}

// vsrcType: _vsrc carries p's elements (32-bit ones, 16-bit integers and
// float16 bits, widened in the kernel).
func vsrcType(p *kernels.Param) bool {
	switch p.DType {
	case "float32", "int32", "uint32", "int64", "uint64", "int16", "uint16", "float16":
		return true
	}
	return false
}

// gatherInPlace is the kernel and run() of the in-kernel form (see above);
// ok is false when a loop load's per-iteration read was not found among the
// translated lines to take its gather's place (the form would read the whole
// array's block where the old read stood), and the padded form stays alone.
func (m *ewMode) gatherInPlace(t *tr, dims []string, ext map[string]val, vm map[int]bool, out *kernels.Param) (kern, wrap, win []string, ok bool) {
	src := map[string]string{} // a gathered array: the load whose ref carries it
	var refs []string
	for i, l := range m.loads {
		if vm[i] {
			if src[l.param] != "" {
				continue
			}
			src[l.param] = l.name
		}
		refs = append(refs, l.name+"_ref")
	}
	for _, s := range m.stores {
		refs = append(refs, s.name+"_ref")
	}
	// a 1-D array gathered: its pad to whole 128-lane rows is fused into
	// the kernel's input, which the kernel copies once per block into a
	// VMEM scratch and gathers from there (a fusion read at dynamic rows
	// does not compile, libtpu 0.0.52; unfused, XLA writes the padded copy
	// to HBM and reads it again: fixed_gather 3.25x the layout minimum).
	// A float16 array gathered the same way: its int16 view (_f16_bits) is
	// fused into the kernel's input (Mosaic takes no float16 inputs: "Only
	// arguments with ... bfloat16 or 32-bit element types are supported");
	// unfused, the conversion is an XLA op of its own, and beside it XLA
	// copies the kernel's other inputs into VMEM first (half_interp, v6e:
	// 4.17x the layout minimum, 1.00x fused with a float16 output block)
	flatSrc := map[string]bool{}
	var scratch []string
	for i, l := range m.loads {
		if vm[i] && src[l.param] == l.name && (len(t.params[l.param].Shape) == 1 || t.bitsHalf(t.params[l.param])) {
			flatSrc[l.param] = true
			refs = append(refs, l.name+"_vm")
			scratch = append(scratch, l.name)
		}
	}
	srcRef := func(l ewAccess) string {
		if flatSrc[l.param] {
			return src[l.param] + "_vm"
		}
		return src[l.param] + "_ref"
	}
	// a float16 output: the outputs' blocks unsqueezed, (1, BROWS, BCOLS),
	// their stores at [0], so that a float16 block's int16 view
	// (_f16_out) keeps its rank (a squeezed block does not bitcast, libtpu
	// 0.0.52: "'tpu.memref_bitcast' op Ranks do not match") and no XLA copy
	// of an int16 result follows the kernel
	plane := false
	for _, s := range m.stores {
		plane = plane || t.bitsHalf(t.params[s.param])
	}
	windowed := m.windowable(vm, out, flatSrc, plane)
	at := func(l ewAccess) string { // the window's origin a windowed kernel is given
		if !windowed {
			return ""
		}
		return src[l.param] + "_at"
	}
	var body []string
	w := func(format string, a ...any) { body = append(body, fmt.Sprintf(format, a...)) }
	if plane {
		w("    SHAPE = %s.shape[1:]", m.stores[0].name+"_ref")
	} else {
		w("    SHAPE = %s.shape", m.stores[0].name+"_ref")
	}
	w("    ROW = pl.program_id(1) * SHAPE[0] + lax.broadcasted_iota(jnp.int32, SHAPE, 0)")
	w("    COL = pl.program_id(2) * SHAPE[1] + lax.broadcasted_iota(jnp.int32, SHAPE, 1)")
	w("    d = _vpos(OMETA, pl.program_id(0), ROW, COL)")
	writeIndexVars(w, "    ", dims, ext)
	for _, name := range scratch {
		w("    %s_vm[...] = %s_ref[...]", name, name)
	}
	var metas []string
	inLoop := map[string]string{} // a loop load's per-iteration read: its in-kernel gather
	for i, l := range m.loads {
		switch {
		case len(l.loops) > 0:
			from := strings.TrimSpace(t.loadSliceLine(l.name, l.name+"_ref", loopIndexPy(l.loops), t.params[l.param]))
			inLoop[from] = strings.TrimSpace(t.vtakeLine(l, srcRef(l), src[l.param], at(l)))
		case vm[i]:
			body = append(body, t.vtakeLine(l, srcRef(l), src[l.param], at(l)))
		default:
			body = append(body, t.loadLine(l.name, l.name+"_ref", t.params[l.param]))
		}
	}
	var ats []string
	for _, l := range m.loads {
		if src[l.param] == l.name {
			metas = append(metas, l.name+"_meta")
			if windowed {
				ats = append(ats, l.name+"_at")
			}
		}
	}
	taken := map[string]bool{}
	stored := 0
	for _, line := range t.lines {
		if to, ok := inLoop[strings.TrimSpace(line)]; ok {
			taken[strings.TrimSpace(line)] = true
			line = line[:len(line)-len(strings.TrimLeft(line, " "))] + to
		}
		if plane {
			for _, s := range m.stores {
				ref := s.name + "_ref"
				for _, lhs := range []string{ref, "_f16_out(" + ref + ")"} {
					if l := strings.TrimLeft(line, " "); strings.HasPrefix(l, lhs+"[...] = ") {
						line = line[:len(line)-len(l)] + lhs + "[0] = " + strings.TrimPrefix(l, lhs+"[...] = ")
						stored++
					}
				}
			}
		}
		w("    %s", line)
	}
	if len(taken) != len(inLoop) || (plane && stored != len(m.stores)) {
		return nil, nil, nil, false
	}
	body = dropUnusedSwap(pruneDead(body))
	def, kw := kernelDef(refs, body, slices.Concat(t.uniformNames(dims), []string{"OMETA"}, metas, ats))
	kern = append([]string{def}, body...)
	kwWhole, kwWin := kw, kw
	if windowed {
		// the whole arrays in VMEM: no window; windowed, _vwin_kernel
		// passes each window's origin
		kwWhole, kwWin = nil, nil
		for _, k := range kw {
			if slices.Contains(ats, k) {
				kwWhole = append(kwWhole, k+"=None")
			} else {
				kwWhole = append(kwWhole, k)
				kwWin = append(kwWin, k)
			}
		}
		win = m.runWin(t, dims, ext, vm, src, out, kwWin, ats)
	}

	ww := func(format string, a ...any) { wrap = append(wrap, fmt.Sprintf(format, a...)) }
	t.writeDomain(ww, dims, ext)
	var views []string
	for _, l := range m.loads {
		if src[l.param] == l.name {
			ww("    %s_in, %s_meta = _vsrc(%s)", l.name, l.name, t.kernelInput(t.params[l.param], "p_"+l.param))
			views = append(views, l.name+"_in")
		}
	}
	ww("    if not _vfits(%s):", strings.Join(views, ", "))
	if windowed {
		ww("        return _run_win(args, interpret=interpret)  # too large to gather in VMEM whole")
	} else {
		ww("        return _run_xla(args, interpret=interpret)  # too large to gather in VMEM")
	}
	sub := t.sublanes()
	ww("    (VLEAD, KROWS, KCOLS), OMETA = _vview(%s)", t.shapePy(out))
	// small blocks (at most 4096 elements): every gather is unrolled over
	// the block's vregs, once per source row; whole sublane tiles (Mosaic's
	// lane gather takes no block of fewer rows)
	ww("    BCOLS = min(_round_up(KCOLS, 128), 512)")
	ww("    BROWS = min(_round_up(KROWS, %d), max(%d, 4096 // BCOLS // %d * %d))", sub, sub, sub, sub)
	ww("    spec = pl.BlockSpec((None, BROWS, BCOLS), lambda lead, i, j: (lead, i, j))")
	ospec := "spec"
	if plane {
		ww("    ospec = pl.BlockSpec((1, BROWS, BCOLS), lambda lead, i, j: (lead, i, j))")
		ospec = "ospec"
	}
	var ins, inSpecs, fuse, oshapes, ospecs []string
	fused := false // some input may take a fusion (its fuse entry is a condition, not False)
	for i, l := range m.loads {
		switch {
		case vm[i] && src[l.param] == l.name && flatSrc[l.param]:
			// fused (the pad, a float16 array's bits), read whole into
			// the scratch
			ins = append(ins, l.name+"_in")
			inSpecs = append(inSpecs, "_vwhole("+l.name+"_in)")
			if t.bitsHalf(t.params[l.param]) {
				fuse = append(fuse, "True")
			} else {
				fuse = append(fuse, "p_"+l.param+".shape[0] % 128 != 0")
			}
			fused = true
		case vm[i] && src[l.param] == l.name:
			// not fused: a fusion read by the kernel's dynamic row slices
			// does not compile (libtpu 0.0.52)
			ins = append(ins, l.name+"_in")
			inSpecs = append(inSpecs, "_vwhole("+l.name+"_in)")
			fuse = append(fuse, "False")
		case !vm[i]:
			ins = append(ins, "_vsrc("+t.kernelInput(t.params[l.param], "p_"+l.param)+")[0]")
			inSpecs = append(inSpecs, "spec")
			// a 1-D array padded to whole 128-lane rows: the pad fused into
			// the kernel's input; other views are bitcasts
			if len(out.Shape) == 1 {
				fuse = append(fuse, "D % 128 != 0")
				fused = true
			} else {
				fuse = append(fuse, "False")
			}
		}
	}
	fusion := ""
	if fused {
		fusion = ", allow_input_fusion=[" + strings.Join(fuse, ", ") + "]"
	}
	for _, s := range m.stores {
		oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct((VLEAD, KROWS, KCOLS), %s)", t.outBlockType(t.params[s.param])))
		ospecs = append(ospecs, ospec)
	}
	ww("    outs = pl.pallas_call(")
	ww("        %s,", partialKernel(kwWhole))
	ww("        grid=(VLEAD, pl.cdiv(KROWS, BROWS), pl.cdiv(KCOLS, BCOLS)),")
	ww("        in_specs=[%s],", strings.Join(inSpecs, ", "))
	ww("        out_specs=[%s],", strings.Join(ospecs, ", "))
	ww("        out_shape=[%s],", strings.Join(oshapes, ", "))
	if len(scratch) > 0 {
		var sc []string
		for _, name := range scratch {
			sc = append(sc, fmt.Sprintf("pltpu.VMEM(_vwhole(%s_in).block_shape, %s_in.dtype)", name, name))
		}
		ww("        scratch_shapes=[%s],", strings.Join(sc, ", "))
	}
	ww("        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",) * 3%s),", fusion)
	ww("        interpret=interpret,")
	ww("    )(%s)", strings.Join(ins, ", "))
	var res []string
	for i, s := range m.stores {
		prm := t.params[s.param]
		o := "_vback(" + t.kernelOutput(prm, fmt.Sprintf("outs[%d]", i)) + ", OMETA)"
		if !t.bitsHalf(prm) && blockDType(prm) != dtypePy(prm.DType) {
			o += ".astype(" + dtypePy(prm.DType) + ")"
		}
		res = append(res, fmt.Sprintf("%q: %s", s.param, o))
	}
	ww("    return {%s}", strings.Join(res, ", "))
	return kern, wrap, win, true
}

// vtakeLine is the kernel's read of load l from the whole array in VMEM
// (ref, holding the view whose meta is load from's): its element at l's
// index, which for a gather by value is rebuilt from the loads before it.
func (t *tr) vtakeLine(l ewAccess, ref, from, win string) string {
	prm := t.params[l.param]
	idx := l.idx.py
	switch {
	case l.gather:
		idx = l.at
	case len(l.loops) > 0 || l.idx.k == kUniform:
		// _vtake takes a block of indices: an iteration's index, or a fixed
		// one (table[0] beside a gather), may not read the thread's position
		idx = "jnp.broadcast_to(jnp.asarray(" + idx + ", jnp.int32), SHAPE)"
	}
	fill := ""
	switch {
	case l.gather && t.bitsHalf(prm):
		fill = ", 0x7E00" // float16 NaN's bits
	case l.gather:
		fill = ", jnp.nan"
	}
	read := fmt.Sprintf("_vtake(%s, %s_meta, %s%s)", ref, from, idx, fill)
	if win != "" { // a window of the array: _vwin_at's meta and index in it
		read = fmt.Sprintf("_vtake(%s, *_vwin_at(%s_meta, %s, %s)%s)", ref, from, win, idx, fill)
	}
	ct := computeType(prm)
	switch {
	case t.bitsHalf(prm):
		read = "_h2f(" + read + ")"
	case elemBytes(prm) == 2 || blockDType(prm) != ct:
		read += ".astype(" + ct + ")"
	}
	return "    " + l.name + " = " + read
}

var (
	reKernelNames = regexp.MustCompile(`\b_kernel\b`)
	reXLAForm     = regexp.MustCompile(`\b_(kernel|run)_xla\b`)
)

// renameXLAForm gives a draft's XLA form (withXLAFallback) names of its
// own in one value's part of a split draft (splitDraft), beside the other's.
func renameXLAForm(body, suffix string) string {
	return reXLAForm.ReplaceAllString(body, "_${1}_xla"+suffix)
}

// withXLAFallback joins the in-kernel form (vmem, a rendered kernel and
// run()) and the padded form (xla), renamed _kernel_xla and _run_xla, which
// run() hands over to when the gathered arrays do not fit VMEM; ok is false
// when xla has no run() to rename (the module would define run twice).
func withXLAFallback(vmem, xla string) (string, bool) {
	const def = "\ndef run(args, *, interpret):"
	if strings.Count(xla, def) != 1 {
		return "", false
	}
	xla = reKernelNames.ReplaceAllString(xla, "_kernel_xla")
	xla = strings.Replace(xla, def, "\ndef _run_xla(args, *, interpret):", 1)
	return vmem + "\n\n" + xla, true
}
