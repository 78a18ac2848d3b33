package pallas

import (
	"fmt"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// Windowed in-kernel gathers (issue 11: bytes accessed within 1.25x of the
// minimum, where the arrays gathered from do not fit VMEM whole).
//
// The in-kernel form (vtake.go) brings each gathered array into VMEM whole,
// within _vfits' budget; past it the padded form gathers in XLA, whose cost
// is the whole operand per index (float32_instance, mmcv's carafe: 792x the
// layout minimum). When every gathered read's address depends on sizes only
// (no gather by value), _run_win works out at trace time, in NumPy, which
// elements each grid step of the output's view reads, over the thread's
// iterations and only where the thread reads them (the load's mask, rebuilt
// from the kernel's masks), and gives each array the smallest block of its
// own layout (its dims in XLA's order, unmerged: _vnd) that holds every
// step's reads in one block. A scalar-prefetched table names each step's
// block; the kernel is the in-kernel form's, each read taken by _vtake from
// the window at the index _vwin_at rebases into it. Consecutive steps that
// name the same block read it once, so each array is read about once. A read
// outside its array, or windows past the budget, leave the call to the
// padded form (_run_xla).

// windowable: the in-kernel form may take windows: no gather by value (its
// addresses are data), no float16 output plane, no 1-D array padded into a
// VMEM scratch, an output of two or more dims.
func (m *ewMode) windowable(vm map[int]bool, out *kernels.Param, flatSrc map[string]bool, plane bool) bool {
	if plane || len(flatSrc) > 0 || len(out.Shape) < 2 {
		return false
	}
	for i, l := range m.loads {
		if vm[i] && l.gather {
			return false
		}
	}
	return true
}

// liveExpr is when the thread reads load l, as the wrapper computes it: its
// mask with the names bindMask gave rebuilt; "True" (read everywhere, the
// cautious answer) when the mask depends on loaded data or reads a name
// not in known.
func (t *tr) liveExpr(l ewAccess, known map[string]bool) string {
	if l.mask.py == "" || isTrue(l.mask) || l.mask.k == kData {
		return "True"
	}
	py := l.mask.py
	for range 64 {
		changed := false
		py = rePyIdent.ReplaceAllStringFunc(py, func(id string) string {
			if d, ok := t.maskDefs[id]; ok {
				changed = true
				return "(" + d + ")"
			}
			return id
		})
		if !changed || len(py) > maxExpanded {
			break
		}
	}
	if len(py) > maxExpanded {
		return "True"
	}
	for _, at := range rePyIdent.FindAllStringIndex(py, -1) {
		id := py[at[0]:at[1]]
		attr := at[0] > 0 && py[at[0]-1] == '.' // jnp.logical_and
		if !attr && !known[id] && !pyDraftSafe[id] && !strings.HasPrefix(id, "_") {
			return "True"
		}
	}
	return py
}

// runWin is _run_win's body: the windows worked out at trace time and the
// in-kernel form's kernel called over them (kw: its keywords but the
// windows' origins, ats: those, one per array gathered from).
func (m *ewMode) runWin(t *tr, dims []string, ext map[string]val, vm map[int]bool, src map[string]string, out *kernels.Param, kw, ats []string) []string {
	var wrap []string
	ww := func(format string, a ...any) { wrap = append(wrap, fmt.Sprintf(format, a...)) }
	t.writeDomain(ww, dims, ext)
	known := map[string]bool{"d": true}
	for _, u := range t.uniformNames(dims) {
		known[u] = true
	}
	for _, d := range dims {
		known["iv_"+d], known["q_"+d] = true, true
	}
	for _, l := range t.nloops {
		known[l.lv] = true
	}
	for i, l := range m.loads {
		if vm[i] {
			for _, id := range pyIdents(l.idx.py) {
				known[id] = true
			}
		}
	}
	for _, l := range m.loads {
		if src[l.param] == l.name {
			ww("    %s_in, %s_meta = _vnd(%s)", l.name, l.name, t.kernelInput(t.params[l.param], "p_"+l.param))
		}
	}
	sub := t.sublanes()
	ww("    (VLEAD, KROWS, KCOLS), OMETA = _vview(%s)", t.shapePy(out))
	ww("    BCOLS = min(_round_up(KCOLS, 128), 512)")
	ww("    BROWS = min(_round_up(KROWS, %d), max(%d, 4096 // BCOLS // %d * %d))", sub, sub, sub, sub)
	// on the host's CPU: the TPU compile gate's default device is deviceless
	ww("    with jax.ensure_compile_time_eval(), jax.default_device(jax.devices(\"cpu\")[0]):")
	ww("        WLEAD, WROW, WCOL = np.indices((VLEAD, KROWS, KCOLS))")
	ww("        d = _vpos(OMETA, WLEAD, WROW, WCOL)")
	writeIndexVars(ww, "        ", dims, ext)
	// per array, per load of it: its reads' addresses and when the thread
	// reads them (None: always), generators that _vwin runs one iteration
	// at a time (each an array the output's size); the latter written once,
	// as a function, when every array has the same
	var entries [][2]string
	var lives []string
	for _, s := range m.loads {
		if src[s.param] != s.name {
			continue
		}
		var addrs, live []string
		always := true
		for i, l := range m.loads {
			if !vm[i] || src[l.param] != s.name {
				continue
			}
			e := t.liveExpr(l, known)
			always = always && e == "True"
			if len(l.loops) > 0 {
				comp := loopComprehension(l.loops)
				addrs = append(addrs, fmt.Sprintf("(%s %s)", l.idx.py, comp))
				live = append(live, fmt.Sprintf("(%s %s)", e, comp))
			} else {
				addrs = append(addrs, fmt.Sprintf("(%s,)", l.idx.py))
				live = append(live, fmt.Sprintf("(%s,)", e))
			}
		}
		lv := "[" + strings.Join(live, ", ") + "]"
		if always {
			lv = "None"
		}
		entries = append(entries, [2]string{s.name, "[" + strings.Join(addrs, ", ") + "]"})
		lives = append(lives, lv)
	}
	shared := len(lives) > 1 && lives[0] != "None"
	for _, l := range lives {
		shared = shared && l == lives[0]
	}
	if shared {
		ww("        def WLIVE():")
		ww("            return %s", lives[0])
	}
	ww("        WINS = _vwin(")
	ww("            [")
	for i, e := range entries {
		live := lives[i]
		if shared {
			live = "WLIVE()"
		}
		ww("                (%s_in, %s_meta, %s, %s),", e[0], e[0], e[1], live)
	}
	ww("            ],")
	ww("            (VLEAD, KROWS, KCOLS),")
	ww("            (BROWS, BCOLS),")
	ww("        )")
	ww("    if WINS is None:")
	ww("        return _run_xla(args, interpret=interpret)  # the windows too large for VMEM")
	ww("    WTABLE, WBLOCKS, WSPECS = WINS")
	ww("    spec = pl.BlockSpec((None, BROWS, BCOLS), lambda lead, i, j, _: (lead, i, j))")
	var ins, inSpecs, oshapes, ospecs, at []string
	nwin := 0
	for i, l := range m.loads {
		switch {
		case vm[i] && src[l.param] == l.name:
			at = append(at, fmt.Sprint(len(ins)))
			ins = append(ins, l.name+"_in")
			inSpecs = append(inSpecs, fmt.Sprintf("WSPECS[%d]", nwin))
			nwin++
		case !vm[i]:
			ins = append(ins, "_vsrc("+t.kernelInput(t.params[l.param], "p_"+l.param)+")[0]")
			inSpecs = append(inSpecs, "spec")
		}
	}
	for _, s := range m.stores {
		oshapes = append(oshapes, fmt.Sprintf("jax.ShapeDtypeStruct((VLEAD, KROWS, KCOLS), %s)", t.outBlockType(t.params[s.param])))
		ospecs = append(ospecs, "spec")
	}
	final := m.names(t, dims) // the keywords' names in the module (quoted: not renamed)
	var names []string
	for _, a := range ats {
		names = append(names, fmt.Sprintf("%q", final.apply(a)))
	}
	ww("    outs = pl.pallas_call(")
	ww("        _vwin_kernel(%s, [%s], WBLOCKS, [%s]),", partialKernel(kw), strings.Join(names, ", "), strings.Join(at, ", "))
	ww("        grid_spec=pltpu.PrefetchScalarGridSpec(")
	ww("            num_scalar_prefetch=1,")
	ww("            grid=(VLEAD, pl.cdiv(KROWS, BROWS), pl.cdiv(KCOLS, BCOLS)),")
	ww("            in_specs=[%s],", strings.Join(inSpecs, ", "))
	ww("            out_specs=[%s],", strings.Join(ospecs, ", "))
	ww("        ),")
	ww("        out_shape=[%s],", strings.Join(oshapes, ", "))
	ww("        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",) * 3),")
	ww("        interpret=interpret,")
	ww("    )(WTABLE, %s)", strings.Join(ins, ", "))
	var res []string
	for i, s := range m.stores {
		prm := t.params[s.param]
		o := "_vback(" + t.kernelOutput(prm, fmt.Sprintf("outs[%d]", i)) + ", OMETA)"
		if blockDType(prm) != dtypePy(prm.DType) {
			o += ".astype(" + dtypePy(prm.DType) + ")"
		}
		res = append(res, fmt.Sprintf("%q: %s", s.param, o))
	}
	ww("    return {%s}", strings.Join(res, ", "))
	return wrap
}

// renderRunWin is _run_win as a module's function, beside run().
func renderRunWin(t *tr, nm *renamer, wrap []string) string {
	mod := renderDraft(t, nm, nil, wrap)
	return strings.Replace(mod, "\n\n\ndef run(args, *, interpret):\n", "def _run_win(args, *, interpret):\n", 1)
}
