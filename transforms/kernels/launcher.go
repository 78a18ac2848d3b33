package kernels

import (
	"context"
	"maps"
	"slices"

	"github.com/pallasify/pallasify/transforms/ts"
)

// launcherSizes is what the host function at a kernel's launch site states
// about the kernel's arguments, whatever values a launch passes: the host
// tensor each pointer points into, and each integer argument as an
// expression of host sizes (a tensor's dim, its element count, an integer
// parameter of the host function). One launch shows the values only, so
// sizes equal at that launch cannot be told apart; the host code can.
type launcherSizes struct {
	tensor []string // per kernel argument: a pointer's host tensor ("" when unknown)
	value  []*Expr  // per kernel argument: an integer's value over host sizes (nil when unknown)
	// sizes are what each host size symbol is (a size the host checks
	// equal to another is a dim of both tensors)
	sizes map[string][]hostSize
	// grid is the launch's grid over host sizes (nil dims when unknown)
	grid [3]*Expr
}

// hostSize is one host size symbol: dim of tensor, its element count
// (numel), or, with no tensor, an integer parameter of the host function.
type hostSize struct {
	tensor string
	dim    int
	numel  bool
}

// launcherSizesAt reads the host function around launch site s of kernel
// k; nil when the launch passes another number of arguments.
func launcherSizesAt(ctx context.Context, p *ts.Parser, k *item, s *launchSite) *launcherSizes {
	kps := kernelParams(k.file, k.node)
	args := ts.Children(s.call.ChildByFieldName("arguments"))
	if len(args) != len(kps) || s.hostFn == nil {
		return nil
	}
	h := newHost(ctx, p, s.file, s.items, s.hostFn)
	defer h.close()
	off, src := s.mark.Start, s.file.masked
	ls := &launcherSizes{tensor: make([]string, len(kps)), value: make([]*Expr, len(kps)), sizes: map[string][]hostSize{}}
	for name, t := range h.params {
		if isIntType(t) {
			ls.sizes[name] = append(ls.sizes[name], hostSize{})
		}
	}
	for root, tf := range h.facts {
		for j, d := range tf.dims {
			if d != nil && d.Op == "sym" {
				ls.sizes[d.Name] = append(ls.sizes[d.Name], hostSize{tensor: root, dim: j})
			}
		}
		if tf.numel != nil && tf.numel.Op == "sym" {
			ls.sizes[tf.numel.Name] = append(ls.sizes[tf.numel.Name], hostSize{tensor: root, numel: true})
		}
	}
	if cfg := LaunchConfig(s.mark.Text); len(cfg) >= 2 {
		if g, err := h.dim3Text(cfg[0], off); err == nil {
			for d, e := range g {
				if ls.known(e) {
					ls.grid[d] = e
				}
			}
		}
	}
	for i, kp := range kps {
		if kp.pointer {
			if t, err := h.tensorArg(args[i], src, off); err == nil {
				if root, ok := h.tensorRoot(t, off); ok {
					ls.tensor[i] = root
				}
			}
			continue
		}
		if e, err := h.tr(args[i], src, off); err == nil && ls.known(e) {
			ls.value[i] = e
		}
	}
	return ls
}

// known reports whether every symbol of e is a host size.
func (ls *launcherSizes) known(e *Expr) bool {
	for _, sym := range e.Symbols() {
		if _, ok := ls.sizes[sym]; !ok {
			return false
		}
	}
	return true
}

// atom is the host size integer argument i is, when the host passes one
// size as it is (b, x.size(0), n = x.numel()); ok false otherwise.
func (ls *launcherSizes) atom(i int) ([]hostSize, string, bool) {
	if ls == nil || i >= len(ls.value) || ls.value[i] == nil || ls.value[i].Op != "sym" {
		return nil, "", false
	}
	name := ls.value[i].Name
	return ls.sizes[name], name, true
}

// hostDim is the symbol of dim j of pointer argument i (rank dims, value
// v at the launch) when the host function states it: an integer argument
// the host passes as that dim of the pointer's tensor (its element count
// for a buffer read as one dim), with the same value at the launch. nil
// when the host says nothing of that dim; c is the argument.
func (sh *shaper) hostDim(i, j, rank int, hinted bool, v int64) (e *Expr, c int) {
	ls := sh.k.launcher
	if ls == nil || i >= len(ls.tensor) || ls.tensor[i] == "" {
		return nil, -1
	}
	for c, a := range sh.first.Args {
		if !isIntScalar(a) || !identOnly.MatchString(argName(sh.k, a, c)) {
			continue
		}
		hss, _, ok := ls.atom(c)
		if !ok {
			continue
		}
		named := false
		for _, hs := range hss {
			dimOK := hinted && !hs.numel && (hs.dim == j || hs.dim == j-rank)
			numelOK := rank == 1 && hs.numel
			named = named || hs.tensor == ls.tensor[i] && (dimOK || numelOK)
		}
		if x, okX := scalarInt(a); okX && x == v && named {
			if sh.hostDims == nil {
				sh.hostDims = map[[2]int]bool{}
			}
			sh.hostDims[[2]int{i, j}] = true
			return Sym(argName(sh.k, a, c)), c
		}
	}
	return nil, -1
}

// hostFree are the symbols the host function frees: sizes the sweep may
// vary apart from each other and from the captured launch, because the
// host code, not the launch's values, says what each one is. A symbol is
// free when the host passes it as one size of its own (an integer
// parameter, or a tensor's dim that every buffer dim named by it is); no
// other symbol is that size; no literal dim of a buffer has its value (a
// size the launch cannot tell from it); and no integer argument the spec
// fixes is computed from it (nthreads = out.numel() while out's dims are
// swept). Sizes no scalar passes (dim symbols) free nothing.
func (sh *shaper) hostFree() []string {
	ls := sh.k.launcher
	if ls == nil || len(sh.dimSyms) > 0 {
		return nil
	}
	env := sh.env(sh.first)
	symArg := map[string]int{}
	for c, a := range sh.first.Args {
		if contains(sh.syms, argName(sh.k, a, c)) {
			symArg[argName(sh.k, a, c)] = c
		}
	}
	blocked := map[string]bool{}
	// integer arguments the spec fixes: each blocks the symbols it is
	// computed from
	for _, c := range sh.hiddenScalars() {
		e := ls.value[c]
		if e == nil {
			return nil // the host computes it some way we cannot read
		}
		for _, s := range e.Symbols() {
			for _, hs := range ls.sizes[s] {
				sh.blockFrom(hs, s, symArg, blocked)
			}
		}
	}
	var lits []int64
	for _, ds := range sh.dims {
		for _, d := range ds {
			if d.Op == "lit" {
				lits = append(lits, d.Val)
			}
		}
	}
	seen := map[string]string{}
	var out []string
	for _, s := range sh.syms {
		c, isArg := symArg[s]
		if !isArg || blocked[s] {
			continue
		}
		hss, name, ok := ls.atom(c)
		if !ok {
			continue
		}
		if other, dup := seen[name]; dup {
			out = slices.DeleteFunc(out, func(x string) bool { return x == other })
			continue
		}
		seen[name] = s
		if slices.Contains(lits, env[s]) || !sh.namedByHost(s, hss) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// blockFrom marks, for a fixed integer argument computed from host size
// hs (symbol s), the symbols it is computed from: the one the host passes
// as that integer parameter, or every symbol of the tensor's buffers.
func (sh *shaper) blockFrom(hs hostSize, s string, symArg map[string]int, blocked map[string]bool) {
	ls := sh.k.launcher
	if hs.tensor == "" {
		for sym, sc := range symArg {
			if _, name, ok := ls.atom(sc); ok && name == s {
				blocked[sym] = true
			}
		}
		return
	}
	for i, ds := range sh.dims {
		if i < len(ls.tensor) && ls.tensor[i] == hs.tensor {
			for _, d := range ds {
				for _, sym := range d.Symbols() {
					blocked[sym] = true
				}
			}
		}
	}
}

// namedByHost reports whether every buffer dim the spec names by symbol s
// is one the host states as s (for a tensor's dim), or, for an integer
// parameter of the host (hss), which names no tensor's dim there, whether
// no dim it names by value is in a tensor the host reads sizes from: the
// host would read that dim from it too were it that size (mmcv's carafe:
// scale_factor 2 equals the batch of the output whose other dims the host
// reads), so the equality is a coincidence as likely as a relation.
func (sh *shaper) namedByHost(s string, hss []hostSize) bool {
	if slices.ContainsFunc(hss, func(hs hostSize) bool { return hs.tensor == "" }) {
		return !sh.inReadTensor(s)
	}
	for i, ds := range sh.dims {
		for j, d := range ds {
			if slices.Contains(d.Symbols(), s) && !(d.Op == "sym" && sh.hostDims[[2]int{i, j}]) {
				return false
			}
		}
	}
	return true
}

// hostShaper is the shaper whose dims the host function names (shapeWith
// with host), with the symbols it frees, when it frees one and every launch
// of the instance fits it; nil otherwise (sh, read off the values, stays).
func hostShaper(k *Kernel, first CapturedLaunch, sh *shaper, others []CapturedLaunch) (*shaper, []string) {
	if k.launcher == nil {
		return nil, nil
	}
	hs, err := shapeWith(k, first, others, false, true)
	if err != nil {
		return nil, nil
	}
	hs.hostSizeExprs()
	free := hs.hostFree()
	if len(free) == 0 {
		return nil, nil
	}
	hidden := hs.hiddenScalars()
	for _, o := range others {
		if o.Instance != first.Instance {
			continue
		}
		env, ok := hs.fit(o)
		if !ok || !sameScalars(o, first, hidden) {
			return nil, nil
		}
		for c, e := range hs.sizeExpr {
			v, err := e.Eval(env)
			if x, okX := scalarInt(o.Args[c]); err != nil || !okX || v != x {
				return nil, nil
			}
		}
	}
	return hs, free
}

// hostSizeExprs makes each integer argument the spec would fix, which the
// host computes from sizes the spec names (total = x.numel(), group_channel
// = channels / group_size), a size of the spec: the host's expression over
// them, where it gives the launch's value.
func (sh *shaper) hostSizeExprs() {
	ls := sh.k.launcher
	env := sh.env(sh.first)
	for _, c := range sh.hiddenScalars() {
		e := ls.value[c]
		if e == nil || len(e.Symbols()) == 0 {
			continue
		}
		sub := map[string]*Expr{}
		for _, s := range e.Symbols() {
			if x := sh.hostSymbol(s); x != nil {
				sub[s] = x
			}
		}
		if len(sub) != len(e.Symbols()) {
			continue
		}
		se := substitute(e, sub)
		v, err := se.Eval(env)
		if want, ok := scalarInt(sh.first.Args[c]); err != nil || !ok || v != want {
			continue
		}
		if sh.sizeExpr == nil {
			sh.sizeExpr = map[int]*Expr{}
		}
		sh.sizeExpr[c] = se
	}
}

// hostSymbol is host size s over the spec's sizes: the symbol of the
// integer argument the host passes as s, the dim of a buffer the host names
// s (hostDims), or, for a tensor's element count, the product of its
// buffer's dims; nil otherwise.
func (sh *shaper) hostSymbol(s string) *Expr {
	ls := sh.k.launcher
	for c, a := range sh.first.Args {
		if _, name, ok := ls.atom(c); ok && name == s && contains(sh.syms, argName(sh.k, a, c)) {
			return Sym(argName(sh.k, a, c))
		}
	}
	for _, hs := range ls.sizes[s] {
		for i, ds := range sh.dims {
			if i >= len(ls.tensor) || ls.tensor[i] != hs.tensor || hs.tensor == "" {
				continue
			}
			if hs.numel {
				return product(ds)
			}
			for j, d := range ds {
				if sh.hostDims[[2]int{i, j}] && (hs.dim == j || hs.dim == j-len(ds)) {
					return d
				}
			}
		}
	}
	return nil
}

// substitute is e with each symbol of m replaced by its expression.
func substitute(e *Expr, m map[string]*Expr) *Expr {
	if e == nil {
		return nil
	}
	if e.Op == "sym" {
		if x, ok := m[e.Name]; ok {
			return x
		}
		return e
	}
	if e.L == nil && e.R == nil {
		return e
	}
	if e.R == nil {
		c := *e
		c.L = substitute(e.L, m)
		return &c
	}
	return Bin(e.Op, substitute(e.L, m), substitute(e.R, m))
}

// hostSweep widens the captured assignments over the free symbols with
// one shape each, as few as tell them apart: the TPU compile gate compiles
// every validated shape, and mmcv's half three_interpolate, 143 s to
// validate at its one captured shape and 171 s at two, timed out at four
// (the 240 s kernel limit). In it every free symbol is double its value
// plus one (odd: a partial last block), bumped past the values the other
// free symbols took there, so sizes the launch had equal differ. Growing
// only, so an index the launch passed stays in bounds.
func hostSweep(sweep []map[string]int64, free []string) []map[string]int64 {
	var out assignments
	for _, a := range sweep {
		out.add(a)
	}
	for _, a := range sweep {
		b := maps.Clone(a)
		taken := map[int64]bool{}
		for _, s := range free {
			v := 2*a[s] + 1
			for taken[v] {
				v += 2
			}
			taken[v] = true
			b[s] = v
		}
		out.add(b)
	}
	return out.list
}

// hostGrid is grid dimension d as the host function computes it, over the
// symbols the host passes as its sizes, when it gives l's grid; nil
// otherwise. A constant the host states is the grid at every size, so no
// one-block bound follows from it.
func (sh *shaper) hostGrid(l CapturedLaunch, d int) *Expr {
	ls := sh.k.launcher
	if ls == nil || ls.grid[d] == nil {
		return nil
	}
	ren := map[string]string{}
	for c, a := range l.Args {
		if _, name, ok := ls.atom(c); ok && contains(sh.syms, argName(sh.k, a, c)) {
			ren[name] = argName(sh.k, a, c)
		}
	}
	for _, s := range ls.grid[d].Symbols() {
		if _, ok := ren[s]; !ok {
			return nil
		}
	}
	e := ls.grid[d].Rename(ren)
	if v, err := e.Eval(sh.env(l)); err != nil || v != l.Grid[d] {
		return nil
	}
	return e
}

// inReadTensor reports whether symbol s names a dim of a buffer whose
// tensor the host function reads a size of (a dim or its element count).
func (sh *shaper) inReadTensor(s string) bool {
	ls := sh.k.launcher
	read := map[string]bool{}
	for _, hss := range ls.sizes {
		for _, hs := range hss {
			read[hs.tensor] = read[hs.tensor] || hs.tensor != ""
		}
	}
	for i, ds := range sh.dims {
		if i >= len(ls.tensor) || !read[ls.tensor[i]] {
			continue
		}
		for _, d := range ds {
			if slices.Contains(d.Symbols(), s) {
				return true
			}
		}
	}
	return false
}
