package pallas

import (
	"fmt"
	"strings"
)

// Loop drafts whose every loop access reads or writes the thread's own
// column of an array (mmcv's tin_shift: input[n·t·c·hw + i·c·hw + j·hw +
// hw_index], the flat address the thread's base, decomposed into the
// array's coordinates, plus the iteration times the stride of one dim)
// gather each iteration's reads and scatter its writes in XLA in the
// padded form (v6e bytes accessed 353x the layout minimum on tin_shift).
// The column form runs the same kernel over the arrays' own HBM layout
// instead: a block per position of the dims before that dim and between it
// and the two XLA keeps minor (_vperm), the dim's rows whole, so the
// kernel's per-iteration block (ref[i]) is row i of every column of the
// block; a load at the thread's own index elsewhere (tin_shift's shift
// table) is taken in the kernel from the table in SMEM at each position's
// index, a block of indices computed while tracing (_cols_take).
//
// The shape is decided here: every store a loop's, once per array, in
// every thread, of 32-bit data; every load gathered per iteration or at
// a data-free index (a table), of 32-bit data; a kernel that reads no
// coordinate of its block (its body names no ROW, d or program_id).
// Sizes and addresses are known only when the draft is traced, so the
// wrapper decides there (_cols) whether each access is such a column of
// arrays of one shape, the same for all, one thread each, every store's
// rows all written, the tables small and the blocks within VMEM; when not,
// the padded form runs as before.

// loopFormStores is what the column and lane-select forms ask first: no
// per-thread program id column (pj), no gathers, a store in a loop, and
// every output stored exactly once. It gives the 32-bit check and each
// array's store count.
func (m *ewMode) loopFormStores(t *tr, pj int) (word func(string) bool, count map[string]int, ok bool) {
	if pj >= 0 || m.gathers() || !m.anyLoopStore() {
		return nil, nil, false
	}
	word = func(param string) bool {
		prm := t.params[param]
		return prm != nil && (prm.DType == "float32" || prm.DType == "int32")
	}
	count = map[string]int{}
	for _, s := range m.stores {
		count[s.param]++
	}
	for _, p := range t.outputParams() {
		if count[p.Name] != 1 {
			return nil, nil, false
		}
	}
	return word, count, true
}

// columnForm reports whether the draft may take the column form.
func (m *ewMode) columnForm(t *tr, kinds []loopAddress, body []string, pj int) bool {
	word, count, ok := m.loopFormStores(t, pj)
	if !ok {
		return false
	}
	for _, s := range m.stores {
		if len(s.loops) != 1 || count[s.param] != 1 || !isTrue(s.mask) || !word(s.param) {
			return false
		}
	}
	looped := false
	for i, l := range m.loads {
		if kinds[i] != loopGathered || l.gather || !word(l.param) || len(l.loops) > 1 {
			return false
		}
		looped = looped || len(l.loops) == 1
	}
	if !looped {
		return false
	}
	for _, line := range body {
		if strings.Contains(line, "program_id") {
			return false
		}
	}
	return !readsName(body, "ROW") && !readsName(body, "d")
}

// writeColumnIndex writes, inside the wrapper's tracing block (8 spaces),
// _cols' decision and each table load's index block.
func (m *ewMode) writeColumnIndex(t *tr, ww func(string, ...any)) {
	var shapes, accs, stores, tables []string
	for _, l := range m.loads {
		if len(l.loops) == 0 {
			tables = append(tables, fmt.Sprintf("p_%s.size", l.param))
			continue
		}
		shapes = append(shapes, fmt.Sprintf("p_%s.shape", l.param))
		accs = append(accs, fmt.Sprintf("[%s %s]", l.idx.py, loopComprehension(l.loops)))
		stores = append(stores, "False")
	}
	for _, s := range m.stores {
		shapes = append(shapes, fmt.Sprintf("p_%s.shape", s.param))
		accs = append(accs, fmt.Sprintf("[%s %s]", s.idx.py, loopComprehension(s.loops)))
		stores = append(stores, "True")
	}
	ww("        cols = _cols([%s], [%s], [%s], D, [%s])", strings.Join(shapes, ", "), strings.Join(accs, ", "), strings.Join(stores, ", "), strings.Join(tables, ", "))
	for _, l := range m.loads {
		if len(l.loops) == 0 {
			ww("        %s_cols = None if cols is None else _cols_index(%s, cols)", l.name, l.idx.py)
		}
	}
}

// writeColumnCall writes the column form's kernel call and result, where
// _cols found it applies (the padded form follows).
func (m *ewMode) writeColumnCall(t *tr, ww func(string, ...any), kw []string) {
	var takes, ins, specs []string
	for _, l := range m.loads {
		if len(l.loops) == 0 {
			takes = append(takes, "True")
			ins = append(ins, fmt.Sprintf("p_%s.reshape(-1)", l.param), l.name+"_cols")
			specs = append(specs, "pl.BlockSpec(memory_space=pltpu.SMEM)", "_cols_spec(cols, False)")
			continue
		}
		takes = append(takes, "False")
		ins = append(ins, fmt.Sprintf("_cols_view(p_%s, cols)", l.param))
		specs = append(specs, "_cols_spec(cols, True)")
	}
	var ospecs, oshapes, res []string
	for i, s := range m.stores {
		prm := t.params[s.param]
		ospecs = append(ospecs, "_cols_spec(cols, True)")
		oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct(cols[2], %s)", t.blockType(prm)))
		res = append(res, fmt.Sprintf("%q: _cols_result(outs[%d], cols, %s)", s.param, i, dtypePy(prm.DType)))
	}
	ww("    if _form(\"cols\", cols is not None, cols is not None):")
	writeFormCall(ww, fmt.Sprintf("_cols_kernel(%s, (%s,))", partialKernel(kw), strings.Join(takes, ", ")), "cols[2][0], cols[2][2]", `"parallel", "parallel"`,
		"["+strings.Join(specs, ", ")+"]", ospecs, oshapes, strings.Join(ins, ", "), res)
}

// writeFormCall writes the pallas_call of a form chosen in run() (inside
// its if, 8 spaces) and the return of its results.
func writeFormCall(ww func(string, ...any), kernel, grid, semantics, inSpecs string, ospecs, oshapes []string, args string, res []string) {
	ww("        outs = pl.pallas_call(")
	ww("            %s,", kernel)
	ww("            grid=(%s),", grid)
	ww("            in_specs=%s,", inSpecs)
	ww("            out_specs=[%s],", strings.Join(ospecs, ", "))
	ww("            out_shape=[%s],", strings.Join(oshapes, ", "))
	ww("            compiler_params=pltpu.CompilerParams(dimension_semantics=(%s)),", semantics)
	ww("            interpret=interpret,")
	ww("        )(%s)", args)
	ww("        return {%s}", strings.Join(res, ", "))
}

// The lane-select form: where XLA keeps the dim the loop steps along
// minor (mmcv's psamask collect: mask[n, q, h, w] and buffer[n, c, h, w]
// laid out (n, w, h, q) and (n, w, h, c)), each thread's column is a lane
// run of its own row of the view (lead, rows, k). A store whose position
// along k depends on the thread (buffer[n, (hidx + h - hh)·W + (widx + w -
// hw), h, w]) under a condition (the clamped window) then writes, in its
// own row, the lane its row table names (computed while tracing from the
// padded form's destinations, -1 where the thread does not write): the
// kernel loads iteration q as lane q of each row and stores it by a select
// against the lane index over the block, which starts as the array's prior
// content (the padded form's scatter keeps what no thread writes). _lsel
// checks at trace time that every access is such a run, the arrays of one
// shape but along k, laid out alike with k minor, one thread per position,
// and that the blocks fit VMEM; else the forms before run.

// laneForm reports whether the draft may take the lane-select form.
func (m *ewMode) laneForm(t *tr, kinds []loopAddress, body []string, pj int) bool {
	word, count, ok := m.loopFormStores(t, pj)
	if !ok {
		return false
	}
	for _, s := range m.stores {
		if len(s.loops) == 0 || count[s.param] != 1 || !word(s.param) {
			return false
		}
	}
	for i, l := range m.loads {
		if kinds[i] != loopGathered || l.gather || l.prior || !word(l.param) || len(l.loops) == 0 || count[l.param] != 0 {
			return false
		}
	}
	for _, line := range body {
		s := strings.TrimSpace(line)
		if strings.Contains(line, "program_id") || strings.HasPrefix(s, "ROW = ") || strings.HasPrefix(s, "d = ") || strings.Contains(line, "[...]") {
			return false
		}
		for _, st := range m.stores {
			// a store ref only stored through, once a line, at the line's start
			ref := st.name + "_ref"
			if readsName([]string{line}, ref) && (!strings.HasPrefix(s, ref+"[") || strings.Count(line, ref) != 1 || !strings.Contains(s, "] = ")) {
				return false
			}
		}
	}
	return true
}

// writeLaneIndex writes, inside the wrapper's tracing block, _lsel's
// decision (the stores' destinations are the padded form's dst_i).
func (m *ewMode) writeLaneIndex(t *tr, ww func(string, ...any)) {
	var lshapes, accs, sshapes, dsts []string
	for _, l := range m.loads {
		lshapes = append(lshapes, fmt.Sprintf("p_%s.shape", l.param))
		accs = append(accs, fmt.Sprintf("[%s %s]", l.idx.py, loopComprehension(l.loops)))
	}
	for i, s := range m.stores {
		sshapes = append(sshapes, fmt.Sprintf("p_%s.shape", s.param))
		dsts = append(dsts, fmt.Sprintf("dst_%d", i))
	}
	ww("        lsel = _lsel([%s], [%s], [%s], [%s], D)", strings.Join(lshapes, ", "), strings.Join(accs, ", "), strings.Join(sshapes, ", "), strings.Join(dsts, ", "))
}

// writeLaneCall writes the lane-select form's kernel call and result,
// where _lsel found it applies (the padded form follows).
func (m *ewMode) writeLaneCall(t *tr, ww func(string, ...any), kw []string) {
	var loads, stores, ospecs, oshapes, res []string
	for _, l := range m.loads {
		loads = append(loads, "p_"+l.param)
	}
	for i, s := range m.stores {
		prm := t.params[s.param]
		stores = append(stores, "p_"+s.param)
		ospecs = append(ospecs, fmt.Sprintf("_lsel_spec(lsel, p_%s)", s.param))
		oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct(_lsel_shape(lsel, p_%s), %s)", s.param, t.blockType(prm)))
		res = append(res, fmt.Sprintf("%q: _lsel_result(outs[%d], lsel, p_%s.shape, %s)", s.param, i, s.param, dtypePy(prm.DType)))
	}
	ww("    if _form(\"lsel\", lsel is not None, lsel is not None):")
	ww("        ins, in_specs = _lsel_ins(lsel, [%s], [%s])", strings.Join(loads, ", "), strings.Join(stores, ", "))
	writeFormCall(ww, fmt.Sprintf("_lsel_kernel(%s, %d)", partialKernel(kw), len(m.loads)), "lsel[1],", `"parallel",`, "in_specs", ospecs, oshapes, "*ins", res)
}
