package pallas

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// WireKernel is one proven kernel to wire into the tree.
type WireKernel struct {
	Kernel *kernels.Kernel
	// Module is the proven candidate module (validators/CONTRACTS.md).
	Module  string
	Drafter string
	// Verdict is the validator's one-line verdict with its statistics.
	Verdict string
	// Cases are the validated cases; the module header quotes one of them.
	Cases []ValidatedCase
	// TPU is the TPU compile gate's outcome per chip ("v5e", ...), recorded
	// in the module header; empty when the gate did not run.
	TPU map[string]ChipCompile
}

// WireFile is a file wiring creates or rewrites.
type WireFile struct {
	Path      string // slash-separated, relative to the root
	Content   []byte
	Generated bool // created by wiring
}

// WireProblem says why a proven kernel was not (fully) wired.
type WireProblem struct {
	Kernel  string // kernel id
	Path    string
	Message string
}

// Wired records one kernel's generated module.
type Wired struct {
	Kernel string // kernel id
	Module string // path of the generated module
	Entry  string // the torch entry point's name in it
	Sites  int    // call sites rewritten
}

// callSite is one Python call of a kernel's host function.
type callSite struct {
	file       string
	start, end int    // byte span of the call
	text       string // the call's text
	args       []string
	// bare: the call is a whole statement, return value or right-hand side,
	// so the conditional that replaces it needs no parentheses
	bare bool
	// stmt: the call is a whole expression statement starting its line
	// (its result, if any, is dropped)
	stmt bool
}

type plan struct {
	wk      WireKernel
	host    *hostFn
	pyname  string
	ns      string
	modName string // _pallas_<kernel>
	entry   string
	sites   []callSite
	dir     string
	static  []int // host param indexes passed statically (scalars)
	tensors []int // host param indexes of tensors
	// inplace are the host param indexes of tensors the kernel writes in
	// place (the caller allocated them; the host function returns nothing)
	inplace []int
	// keywords are the names Python passes the host parameters by (a pybind
	// m.def's py::arg list); empty: the host's own parameter names
	keywords []string
	outShape map[string]string
	// launcher is the host function that launches the kernel (its source
	// file and name); launches the kernels it launches, in order: with
	// more than one the op is their sequence
	launcher string
	launches []string
	// stages: a sequence's kernels in launch order (the plan of the first
	// carries them all, itself first); each stage's module defines
	// stageJax, its kernel's JAX function over the host's arguments
	stages   []*plan
	stageJax string
	written  []int // a sequence's in-place writes, every stage's, in order
	// branch: the kernel's launch runs under a host if/else (its stages
	// are then the alternatives, not a sequence); missing names the
	// alternative's kernel that is not proven or not planned, why is why
	branch       *hostBranch
	missing, why string
}

// Wire generates, for every proven kernel whose Python call it can map, a
// module next to the call site (the Pallas kernel, its JAX function and the
// PALLASIFY_KERNEL header), the directory's _pallas_ops module (one TorchTPU
// jax_op per kernel, built on first use; register_autograd for a proven
// forward/backward pair), and rewrites the call to dispatch on the tensor's
// device type: "tpu" → the Pallas op, anything else → the original call,
// unchanged. Nothing TPU-specific is imported before a tpu tensor arrives,
// and the extension's import or load is guarded, so the package imports
// where CUDA, jax or torch_tpu is missing. read returns a file's current
// content; pyFiles are the tree's Python files, srcFiles its other files
// (the C++/CUDA sources among them are searched for a header kernel's
// launch, the functions forwarding to its launcher and their bindings).
func Wire(ctx context.Context, ks []WireKernel, read func(p string) ([]byte, bool), pyFiles, srcFiles []string) ([]WireFile, []Wired, []WireProblem) {
	w := &wiring{ctx: ctx, read: read, pyFiles: pyFiles, srcFiles: srcFiles, files: map[string][]byte{}, count: map[*plan]int{},
		opsPlans: map[string][]*plan{}, helpers: map[string]opsHelpers{}}
	w.sequences(w.planAll(ks))
	keepApart(w.plans)
	w.emitKernelModules()
	w.rewriteSites()
	w.guardFiles()
	w.emitOpsModules()
	return w.result()
}

// wiring is one Wire call's state, step by step: the plans, the files
// generated and rewritten so far, and what each directory's ops module
// must define.
type wiring struct {
	ctx      context.Context
	read     func(string) ([]byte, bool)
	pyFiles  []string
	srcFiles []string

	plans    []*plan
	ok       []*plan            // plans whose kernel module was generated
	opsPlans map[string][]*plan // directory -> its ok plans
	helpers  map[string]opsHelpers
	count    map[*plan]int     // call sites rewritten
	out      []WireFile        // generated files
	files    map[string][]byte // rewritten tree files
	wired    []Wired
	probs    []WireProblem
}

// opsHelpers are the optional helpers a directory's ops module defines:
// only those its directory's files use.
type opsHelpers struct {
	lazy    bool // lazy_extension: a guarded load/load_inline
	defined bool // if_op_defined: a guarded torch.library registration
}

func (w *wiring) problem(p *plan, path, msg string) {
	w.probs = append(w.probs, WireProblem{Kernel: p.wk.Kernel.ID, Path: path, Message: msg})
}

// get is a file as wiring has it so far.
func (w *wiring) get(p string) ([]byte, bool) {
	if b, ok := w.files[p]; ok {
		return b, true
	}
	return w.read(p)
}

// planAll plans every kernel (sorted by id); a kernel an earlier run wired
// is reported wired and left alone, so a second run changes nothing. It
// returns why each kernel that could not be planned was not, by name.
func (w *wiring) planAll(ks []WireKernel) map[string]string {
	failed := map[string]string{}
	sort.Slice(ks, func(i, j int) bool { return ks[i].Kernel.ID < ks[j].Kernel.ID })
	for _, wk := range ks {
		if m := wiredBefore(wk.Kernel.ID, w.read, w.pyFiles); m != "" {
			w.wired = append(w.wired, Wired{Kernel: wk.Kernel.ID, Module: m})
			continue
		}
		p, err := planKernel(w.ctx, wk, w.read, w.pyFiles, w.srcFiles)
		if err != nil {
			w.probs = append(w.probs, WireProblem{Kernel: wk.Kernel.ID, Path: wk.Kernel.Path, Message: err.Error()})
			failed[wk.Kernel.Name] = err.Error()
			continue
		}
		w.plans = append(w.plans, p)
	}
	return failed
}

// emitKernelModules generates each plan's kernel module (a sequence's: one
// per stage, all or none).
func (w *wiring) emitKernelModules() {
	for _, p := range w.plans {
		var mods []WireFile
		var err error
		for _, m := range p.modules() {
			var mod string
			if mod, err = m.kernelModule(); err != nil {
				break
			}
			m.dir = p.dir
			mods = append(mods, WireFile{Path: m.modPath(), Content: []byte(mod), Generated: true})
		}
		if err != nil {
			w.problem(p, p.wk.Kernel.Path, err.Error())
			continue
		}
		w.out = append(w.out, mods...)
		w.ok = append(w.ok, p)
		w.opsPlans[p.dir] = append(w.opsPlans[p.dir], p)
	}
}

// rewriteSites rewrites every call site of the wired kernels, last first in
// each file so the spans stay valid, and imports the ops module there.
func (w *wiring) rewriteSites() {
	type siteOf struct {
		p  *plan
		cs callSite
	}
	byFile := map[string][]siteOf{}
	for _, p := range w.ok {
		for _, cs := range p.sites {
			byFile[cs.file] = append(byFile[cs.file], siteOf{p, cs})
		}
	}
	for _, f := range sortedKeys(byFile) {
		src, found := w.get(f)
		if !found {
			continue
		}
		sites := byFile[f]
		sort.SliceStable(sites, func(i, j int) bool {
			if sites[i].cs.start != sites[j].cs.start {
				return sites[i].cs.start > sites[j].cs.start
			}
			return !isInstance(sites[i].p) && isInstance(sites[j].p) // an instance wraps the other's dispatch
		})
		s := string(src)
		rewritten := false
		var prev callSite // the last site rewritten, as it was
		prevEnd := -1     // where its rewrite ends
		for _, x := range sites {
			cs := x.cs
			if prevEnd >= 0 && cs.start == prev.start && cs.end == prev.end && cs.text == prev.text {
				// one call launching two kernels (a template's primary and its float16
				// specialisation): the dtype instance's test comes first, the other's
				// dispatch is its original call
				cs.text, cs.end = s[cs.start:prevEnd], prevEnd
			} else if cs.end > len(s) || s[cs.start:cs.end] != cs.text {
				w.problem(x.p, f, "call site moved; not rewritten")
				continue
			}
			rep := x.p.dispatch(cs, s)
			s = s[:cs.start] + rep + s[cs.end:]
			prev, prevEnd = x.cs, cs.start+len(rep)
			w.count[x.p]++
			rewritten = true
		}
		if rewritten {
			s = addImport(s, opsName, f, w.read)
		}
		w.files[f] = []byte(s)
	}
	for _, p := range w.ok {
		for _, m := range p.modules() {
			w.wired = append(w.wired, Wired{Kernel: m.wk.Kernel.ID, Module: m.modPath(), Entry: p.entry, Sites: w.count[p]})
		}
	}
}

// guardFiles makes the package import where the CUDA extension is not
// built: the extensions' imports and loads in the files wiring touched are
// guarded (a load next to an ops module becomes lazy: built when the CUDA
// path first uses it), and in a directory with an ops module the
// repository's torch.library registrations for the extension's own ops
// (register_fake, impl, ...) run only where the op is defined.
func (w *wiring) guardFiles() {
	var namespaces []string
	for _, p := range w.ok {
		if p.ns != "" && !slices.Contains(namespaces, p.ns) {
			namespaces = append(namespaces, p.ns)
		}
	}
	for _, f := range w.pyFiles {
		if strings.HasPrefix(path.Base(f), "_pallas_") {
			continue
		}
		src, found := w.get(f)
		if !found {
			continue
		}
		dir := path.Dir(f)
		hasOps := len(w.opsPlans[dir]) > 0
		g := string(src)
		if w.touched(f) {
			var lazied bool
			g, lazied = guardExtension(g, hasOps)
			if lazied {
				h := w.helpers[dir]
				h.lazy = true
				w.helpers[dir] = h
				g = addImport(g, opsName, f, w.read)
			}
		}
		if hasOps {
			var guarded bool
			g, guarded = guardRegistrations(g, namespaces)
			if guarded {
				h := w.helpers[dir]
				h.defined = true
				w.helpers[dir] = h
				g = addImport(g, opsName, f, w.read)
			}
		}
		if g != string(src) {
			w.files[f] = []byte(g)
		}
	}
}

// touched reports whether file f holds a wired call site or a wired kernel.
func (w *wiring) touched(f string) bool {
	for _, p := range w.ok {
		if p.wk.Kernel.Path == f {
			return true
		}
		for _, s := range p.sites {
			if s.file == f {
				return true
			}
		}
	}
	return false
}

// emitOpsModules generates each directory's _pallas_ops module.
func (w *wiring) emitOpsModules() {
	pairs := autogradPairs(w.ok)
	for _, dir := range sortedKeys(w.opsPlans) {
		_, pkg := w.read(path.Join(dir, "__init__.py"))
		for _, p := range w.opsPlans[dir] {
			for _, cs := range p.sites {
				if src, ok := w.read(cs.file); ok && reRelativeImport.Match(src) {
					pkg = true
				}
			}
		}
		pkg = pkg && dir != "."
		var parts []string
		for _, p := range w.opsPlans[dir] {
			parts = append(parts, p.opsPart(opsNamespace(dir), pkg, pairs[p]))
		}
		op := path.Join(dir, opsName+".py")
		if dir == "." {
			op = opsName + ".py"
		}
		w.out = append(w.out, WireFile{Path: op, Content: []byte(opsModule(dir, w.opsPlans[dir], parts, w.helpers[dir])), Generated: true})
	}
}

// result formats the generated files and returns them with the rewritten
// ones; a file the tree already holds as it is is left out, so a second run
// reports no change.
func (w *wiring) result() ([]WireFile, []Wired, []WireProblem) {
	out := w.out
	for i := range out {
		out[i].Content = []byte(FormatPython(w.ctx, string(out[i].Content)))
	}
	for _, f := range sortedKeys(w.files) {
		out = append(out, WireFile{Path: f, Content: w.files[f]})
	}
	kept := out[:0]
	for _, f := range out {
		if cur, ok := w.read(f.Path); !ok || !bytes.Equal(cur, f.Content) {
			kept = append(kept, f)
		}
	}
	return kept, w.wired, w.probs
}

func planKernel(ctx context.Context, wk WireKernel, read func(string) ([]byte, bool), pyFiles, srcFiles []string) (*plan, error) {
	k := wk.Kernel
	if k.Spec == nil {
		return nil, fmt.Errorf("no spec")
	}
	_, src, err := launchSource(k, read, srcFiles)
	if err != nil {
		return nil, err
	}
	host, err := findHost(src, k)
	if err != nil {
		return nil, err
	}
	launcher, launches, branch := k.Path+":"+host.name, host.launches, host.branch
	if len(host.args) != len(k.Spec.Params) {
		return nil, fmt.Errorf("the launch passes %d arguments, the kernel takes %d", len(host.args), len(k.Spec.Params))
	}
	// an output passed in: the function that allocates it and calls the
	// launching one is what Python calls
	for range 3 {
		if !outputsPassedIn(k, host) {
			break
		}
		c := host.callerOf(src)
		if c == nil {
			break
		}
		if len(launches) > 1 || branch != nil {
			return nil, fmt.Errorf("%s launches %s in sequence and its outputs are allocated by its caller %s: "+
				"the buffers between the launches are not plain", host.name, strings.Join(launches, ", "), c.name)
		}
		host = c
	}
	p := &plan{wk: wk, host: host, modName: "_pallas_" + sanitize(k.Name), outShape: map[string]string{},
		launcher: launcher, launches: launches, branch: branch}
	if b, ok := bindingOf(src, host.name); ok {
		p.pyname, p.ns, p.keywords = b.name, b.ns, b.keywords
	} else if bound, b := boundHost(host, read, srcFiles); bound != nil {
		// bound in another file, or through forwarding functions and a
		// device registry (mmcv)
		p.host, p.pyname, p.ns, p.keywords = bound, b.name, b.ns, b.keywords
	} else {
		p.pyname = host.name // a load_inline functions= entry
	}
	p.entry = sanitize(p.pyname)
	if err := p.mapParams(); err != nil {
		return nil, err
	}
	sites, err := findSites(ctx, k, p, read, pyFiles)
	if err != nil {
		return nil, err
	}
	if len(sites) == 0 {
		return nil, fmt.Errorf("no Python call of %s found", p.pyname)
	}
	p.sites = sites
	p.dir = path.Dir(sites[0].file)
	return p, nil
}

// mapParams maps the kernel's parameters onto the host function's: inputs
// and scalars are its parameters, an output is a tensor it allocates or one
// the caller passes in, written in place (mmcv: the caller preallocates
// output and the op returns nothing). Every tensor parameter must reach the
// kernel, and the results are what it returns or what it writes in place,
// not both.
func (p *plan) mapParams() error {
	k, host := p.wk.Kernel, p.host
	used := map[int]bool{}
	for i, prm := range k.Spec.Params {
		a := host.args[i]
		switch {
		case prm.Kind == "pointer" && prm.Role != "output":
			if a.param < 0 || !host.params[a.param].tensor {
				return fmt.Errorf("kernel argument %s is not one of %s's tensor parameters", prm.Name, host.name)
			}
			used[a.param] = true
			if prm.Role == "inout" && !slices.Contains(host.returns, a.tensor) {
				p.inplace = append(p.inplace, a.param)
			}
		case prm.Kind == "pointer":
			if a.param >= 0 && host.params[a.param].tensor {
				used[a.param] = true
				p.inplace = append(p.inplace, a.param)
				continue
			}
			if a.tensor == "" || a.param >= 0 {
				return fmt.Errorf("output %s is not allocated by %s", prm.Name, host.name)
			}
			if a.like != "" {
				p.outShape[prm.Name] = a.like
			}
		case prm.Role == "scalar" && a.param < 0 && a.expr != nil:
			// the host computes it from its tensors' sizes and integers
		case prm.Role == "scalar":
			if a.param < 0 || host.params[a.param].tensor {
				return fmt.Errorf("scalar %s is not a parameter of %s", prm.Name, host.name)
			}
			used[a.param] = true
		}
	}
	for i, hp := range host.params {
		if hp.tensor {
			p.tensors = append(p.tensors, i)
		} else {
			p.static = append(p.static, i)
		}
		if !used[i] && hp.tensor && len(p.launches) < 2 {
			// (a sequence's tensor may reach another of its kernels: sequence checks)
			return fmt.Errorf("tensor %s of %s does not reach the kernel", hp.name, host.name)
		}
	}
	if len(p.tensors) == 0 {
		return fmt.Errorf("%s takes no tensor", host.name)
	}
	switch {
	case len(host.returns) == 0 && len(p.inplace) == 0:
		return fmt.Errorf("%s returns nothing the kernel writes", host.name)
	case len(host.returns) > 0 && len(p.inplace) > 0:
		return fmt.Errorf("%s both returns tensors and writes %s in place", host.name, host.params[p.inplace[0]].name)
	}
	for _, r := range host.returns {
		if outputParam(k, host, r) == nil {
			return fmt.Errorf("%s returns %q, which is not a kernel output", host.name, r)
		}
	}
	return nil
}

// wiredBefore is the module an earlier run generated for kernel id (its
// PALLASIFY_KERNEL header names the id), "" when there is none.
func wiredBefore(id string, read func(string) ([]byte, bool), pyFiles []string) string {
	needle := fmt.Sprintf("%s: %s,", pyStr("id"), pyStr(id))
	for _, f := range pyFiles {
		if !strings.HasPrefix(path.Base(f), "_pallas_") {
			continue
		}
		if src, ok := read(f); ok && bytes.Contains(src, []byte("PALLASIFY_KERNEL = {")) && bytes.Contains(src, []byte(needle)) {
			return f
		}
	}
	return ""
}

// keepApart gives kernels that would share a generated module (same kernel
// name) or an ops entry (same Python name) in one directory names suffixed
// with their kernel ids, so neither overwrites the other.
func keepApart(plans []*plan) {
	mods, entries := map[string]int{}, map[string]int{}
	for _, p := range plans {
		mods[p.dir+"/"+p.modName]++
		entries[p.dir+"/"+p.entry]++
	}
	for _, p := range plans {
		id := sanitize(p.wk.Kernel.ID)
		if mods[p.dir+"/"+p.modName] > 1 {
			p.modName += "_" + id
		}
		if entries[p.dir+"/"+p.entry] > 1 {
			p.entry += "_" + id
		}
	}
}

func (p *plan) modPath() string {
	if p.dir == "." || p.dir == "" {
		return p.modName + ".py"
	}
	return path.Join(p.dir, p.modName+".py")
}

func outputParam(k *kernels.Kernel, h *hostFn, v string) *kernels.Param {
	for i, a := range h.args {
		if a.tensor == v && k.Spec.Params[i].Kind == "pointer" && (k.Spec.Params[i].Role == "output" || k.Spec.Params[i].Role == "inout") {
			return &k.Spec.Params[i]
		}
	}
	return nil
}

func sanitize(s string) string {
	return regexp.MustCompile(`\W`).ReplaceAllString(s, "_")
}

// findSites locates the Python calls of the host function.
func findSites(ctx context.Context, k *kernels.Kernel, p *plan, read func(string) ([]byte, bool), pyFiles []string) ([]callSite, error) {
	var callee *regexp.Regexp
	files := pyFiles
	switch {
	case p.ns != "":
		callee = regexp.MustCompile(`^torch\.ops\.` + regexp.QuoteMeta(p.ns) + `\.` + regexp.QuoteMeta(p.pyname) + `(\.default)?$`)
	case k.Origin == kernels.OriginLoadInline || k.Origin == kernels.OriginLoad:
		// the Python file that builds the extension: the kernel's own file
		// (load_inline) or one that references it (load)
		cands := append([]string{k.Path}, k.ReferencedBy...)
		reAssign := regexp.MustCompile(`(?m)^(\w+)\s*=\s*(?:[\w.]+\.)?load(?:_inline)?\s*\(`)
		for _, f := range cands {
			if !strings.HasSuffix(f, ".py") {
				continue
			}
			src, _ := read(f)
			if m := reAssign.FindStringSubmatch(string(src)); m != nil {
				// the extension object is the unit: any attribute access
				// of the function on any alias of it is a call of the op
				// (ext.fn, self.ext.fn, model.ext.fn, getattr(ext, "fn"))
				names := append([]string{m[1]}, extensionAliases(string(src), m[1])...)
				var attrs []string
				for i := range names {
					if j := strings.LastIndexByte(names[i], '.'); j >= 0 && !slices.Contains(attrs, regexp.QuoteMeta(names[i][j+1:])) {
						attrs = append(attrs, regexp.QuoteMeta(names[i][j+1:]))
					}
					names[i] = regexp.QuoteMeta(names[i])
				}
				holder := strings.Join(names, "|")
				if len(attrs) > 0 {
					holder += `|[\w.]+\.(?:` + strings.Join(attrs, "|") + `)`
				}
				fn := regexp.QuoteMeta(p.pyname)
				pattern := `^(?:` + holder + `)\.` + fn + `$|^getattr\(\s*(?:` + holder + `)\s*,\s*["']` + fn + `["']\s*\)$`
				if fns := functionAliases(string(src), names, p.pyname); len(fns) > 0 {
					pattern += `|^(?:` + strings.Join(fns, "|") + `)$`
				}
				callee = regexp.MustCompile(pattern)
				files = []string{f}
				break
			}
		}
		if callee == nil {
			return nil, fmt.Errorf("the extension built from %s is not assigned to a module-level name", k.Path)
		}
	default:
		callee = regexp.MustCompile(`^(?:[\w.]*\.)?(_C|_ext|\w*_cuda|\w*_C)\.` + regexp.QuoteMeta(p.pyname) + `$`)
	}
	// in a file that imports the function itself from the extension
	// (from ._C import fn [as alias]), its bare name is a call of it too
	calleeIn := func(src string) *regexp.Regexp {
		if p.ns != "" || k.Origin == kernels.OriginLoadInline || k.Origin == kernels.OriginLoad {
			return callee
		}
		var names, loaders []string
		for bound, fn := range extFunctions(src) {
			if fn == p.pyname {
				names = append(names, regexp.QuoteMeta(bound))
			}
		}
		for _, m := range reLoaderAssign.FindAllStringSubmatch(src, -1) {
			loaders = append(loaders, regexp.QuoteMeta(m[1]))
		}
		if len(names) == 0 && len(loaders) == 0 {
			return callee
		}
		sort.Strings(names)
		pattern := callee.String()
		if len(names) > 0 {
			pattern += `|^(?:` + strings.Join(names, "|") + `)$`
		}
		if len(loaders) > 0 {
			pattern += `|^(?:` + strings.Join(loaders, "|") + `)\.` + regexp.QuoteMeta(p.pyname) + `$`
		}
		return regexp.MustCompile(pattern)
	}
	parser := ts.NewParser(ts.Python)
	defer parser.Close()
	var sites []callSite
	for _, f := range files {
		if !strings.HasSuffix(f, ".py") || strings.HasPrefix(path.Base(f), "_pallas_") {
			continue
		}
		src, ok := read(f)
		if !ok || !strings.Contains(string(src), p.pyname) {
			continue
		}
		tree, err := parser.Parse(ctx, src)
		if err != nil {
			return nil, err
		}
		calls := calleeIn(string(src))
		ts.Walk(tree.Root(), func(n *ts.Node) bool {
			if n.Type() != "call" {
				return true
			}
			fn := ts.Text(n.ChildByFieldName("function"), src)
			if !calls.MatchString(fn) {
				return true
			}
			if args, ok := p.siteArgs(n, src); ok {
				sites = append(sites, callSite{file: f, start: int(n.StartByte()), end: int(n.EndByte()), text: ts.Text(n, src),
					args: args, bare: bareCall(n), stmt: statementCall(n, src)})
			}
			return false
		})
		tree.Close()
	}
	return sites, nil
}

// siteArgs is the argument text call n passes for each host parameter, in
// the host's order: positional arguments first, then keyword arguments by
// the names Python knows the parameters by (the binding's py::arg names, else
// the host's own). ok is false for a call that passes *args or **kwargs, an
// unknown keyword, or not exactly one argument per parameter.
func (p *plan) siteArgs(n *ts.Node, src []byte) ([]string, bool) {
	names := p.keywords
	if len(names) != len(p.host.params) {
		names = p.paramNames(allIndexes(len(p.host.params)))
	}
	args := make([]string, len(p.host.params))
	set := make([]bool, len(args))
	pos := 0
	for _, a := range ts.Children(n.ChildByFieldName("arguments")) {
		switch a.Type() {
		case "comment":
			continue
		case "list_splat", "dictionary_splat":
			return nil, false
		case "keyword_argument":
			i := slices.Index(names, ts.Text(a.ChildByFieldName("name"), src))
			if i < 0 || set[i] {
				return nil, false
			}
			args[i], set[i] = ts.Text(a.ChildByFieldName("value"), src), true
		default:
			if pos >= len(args) || set[pos] {
				return nil, false
			}
			args[pos], set[pos] = ts.Text(a, src), true
			pos++
		}
	}
	return args, !slices.Contains(set, false)
}

// statementCall reports whether call n is a whole expression statement
// that starts its line.
func statementCall(n *ts.Node, src []byte) bool {
	if n.Parent() == nil || n.Parent().Type() != "expression_statement" {
		return false
	}
	start := int(n.StartByte())
	lineStart := bytes.LastIndexByte(src[:start], '\n') + 1
	return len(bytes.TrimLeft(src[lineStart:start], " \t")) == 0
}

// bareCall reports whether call n is the whole of a statement, a return
// value or an assignment's right-hand side.
func bareCall(n *ts.Node) bool {
	par := n.Parent()
	if par == nil {
		return false
	}
	switch par.Type() {
	case "return_statement", "expression_statement":
		return true
	case "assignment":
		r := par.ChildByFieldName("right")
		return r != nil && r.StartByte() == n.StartByte() && r.EndByte() == n.EndByte()
	}
	return false
}

// extensionAliases are the other names the extension ext is bound to in
// src: "alias = ext" at any indentation, "self.attr = ext" in a method or
// "obj.attr = ext" (a module that keeps the extension as an attribute, as
// KernelBench's models do: self.ext.fn(...), model.ext.fn(...)).
func extensionAliases(src, ext string) []string {
	re := regexp.MustCompile(`(?m)^[ \t]*((?:\w+\.)*\w+)[ \t]*=[ \t]*` + regexp.QuoteMeta(ext) + `[ \t]*(?:#.*)?$`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		if m[1] != ext && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// functionAliases are the names src binds to the extension's function fn
// ("gelu = ext.my_gelu", "self.gelu = ext.my_gelu"), quoted for a regexp;
// exts are the extension's names, already quoted.
func functionAliases(src string, exts []string, fn string) []string {
	re := regexp.MustCompile(`(?m)^[ \t]*((?:self\.)?\w+)[ \t]*=[ \t]*(?:` + strings.Join(exts, "|") + `)\.` +
		regexp.QuoteMeta(fn) + `[ \t]*(?:#.*)?$`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		if q := regexp.QuoteMeta(m[1]); !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// opsName is the per-directory module of TorchTPU registrations.
const opsName = "_pallas_ops"

var reSimpleArg = regexp.MustCompile(`^[\w.]+$|^-?[\d.]+(e-?\d+)?$`)

// simpleArgs reports whether every argument of the call is a name, an
// attribute or a number: evaluating it twice has no effect.
func simpleArgs(cs callSite) bool {
	for _, a := range cs.args {
		if !reSimpleArg.MatchString(strings.TrimSpace(a)) {
			return false
		}
	}
	return true
}

// needsDispatch reports whether a call site goes through <entry>_dispatch.
func (p *plan) needsDispatch() bool {
	for _, cs := range p.sites {
		if !simpleArgs(cs) && !p.asStatement(cs) {
			return true
		}
	}
	return false
}

// dispatch is the rewritten call: a conditional expression choosing the
// Pallas op for tpu tensors (in parentheses unless the call stood alone),
// inside parentheses on lines of its own (ConditionalLines, as ruff format
// writes it) when it would pass maxLine in src.
func (p *plan) dispatch(cs callSite, src string) string {
	torch := "torch"
	if !reImportTorch.MatchString(src) {
		torch = "" // the file has no torch name: compare the dtype's text
	}
	cond := p.tpuCond(func(hi int) string { return cs.args[hi] }, torch)
	if st, ok := p.statementDispatch(cs, src, cond); ok {
		return st
	}
	lineStart := strings.LastIndex(src[:cs.start], "\n") + 1
	lineEnd := strings.Index(src[cs.end:], "\n")
	if lineEnd < 0 {
		lineEnd = len(src) - cs.end
	}
	fits := func(one string) bool {
		return !strings.Contains(one, "\n") && cs.start-lineStart+len(one)+lineEnd <= maxLine
	}
	if !simpleArgs(cs) {
		// arguments with effects would run twice: bind them once
		callee := opsName + "." + p.entry + "_dispatch"
		args := append(slices.Clone(cs.args), "lambda: "+cs.text)
		if one := callee + "(" + strings.Join(args, ", ") + ")"; fits(one) || strings.Contains(cs.text, "\n") {
			return one
		}
		indent := indentOf(src[lineStart:])
		return strings.TrimPrefix(wrapCall(indent, callee, args), indent)
	}
	tpu := fmt.Sprintf("%s.%s(%s)", opsName, p.entry, strings.Join(cs.args, ", "))
	one := tpu + " if " + cond + " else " + cs.text
	if !cs.bare {
		one = "(" + one + ")"
	}
	if fits(one) {
		return one
	}
	return "(\n" + ConditionalLines(indentOf(src[lineStart:]), tpu, cond, cs.text) + "\n" + indentOf(src[lineStart:]) + ")"
}

// isInstance reports a plan of a dtype instance (spec.LaunchedDType): its
// Pallas op takes only tensors of the dtype proven.
func isInstance(p *plan) bool { return p.wk.Kernel.Spec.LaunchedDType != "" }

// reImportTorch is a module-level `import torch` (the name torch is bound).
var reImportTorch = regexp.MustCompile(`(?m)^import torch[ \t]*(#.*)?$`)

// tpuCond is the test choosing the Pallas op: a tpu tensor and, for a dtype
// instance (a kernel proven at a dtype its tests did not launch it at,
// spec.LaunchedDType: a template's float32 instantiation, a float16
// specialisation), tensors of the dtype proven: every tensor the kernel
// reads at spec.ValidatedDType must be one, any other dtype keeps the
// original call, as the proof does not cover it. arg is the expression of
// host parameter hi; torch is the module's name for torch ("": none, the
// dtype's text is compared).
func (p *plan) tpuCond(arg func(hi int) string, torch string) string {
	cond := fmt.Sprintf("%s.device.type == \"tpu\"", arg(p.tensors[0]))
	spec := p.wk.Kernel.Spec
	if spec.LaunchedDType == "" {
		return cond
	}
	for _, hi := range p.tensors {
		if p.kernelParam(hi, func(q *kernels.Param) bool {
			return q.Kind == "pointer" && q.Role != "output" && q.DType == spec.ValidatedDType && !q.Null
		}) == nil {
			continue
		}
		if torch == "" {
			cond += fmt.Sprintf(" and str(%s.dtype) == \"torch.%s\"", arg(hi), spec.ValidatedDType)
		} else {
			cond += fmt.Sprintf(" and %s.dtype == %s.%s", arg(hi), torch, spec.ValidatedDType)
		}
	}
	return cond
}

// asStatement reports whether call site cs is rewritten as an if statement
// (statementDispatch): each branch evaluates the arguments once, so they
// need no binding.
func (p *plan) asStatement(cs callSite) bool {
	return cs.stmt && len(p.inplace) > 0 && !strings.Contains(cs.text, `"""`) && !strings.Contains(cs.text, "'''")
}

// statementDispatch is the rewritten call of an op that writes its outputs
// in place and stands alone as a statement (mmcv: ext_module.op(input, ...,
// output, gamma=gamma)): an if statement, the Pallas op on tpu and the
// original call, re-indented, on every other device (where the call is
// already another kernel's dispatch, an elif of it). ok is false where the
// call does not start its line or holds a multi-line string.
func (p *plan) statementDispatch(cs callSite, src, cond string) (string, bool) {
	if !p.asStatement(cs) {
		return "", false
	}
	indent := src[strings.LastIndex(src[:cs.start], "\n")+1 : cs.start]
	in := indent + "    "
	var b strings.Builder
	if len(indent)+len("if "+cond+":") > maxLine && strings.Contains(cond, " and ") {
		// one condition a line, inside parentheses
		cond = "(\n" + in + strings.ReplaceAll(cond, " and ", "\n"+in+"and ") + "\n" + indent + ")"
	}
	b.WriteString("if " + cond + ":\n")
	b.WriteString(pyCall(in, opsName+"."+p.entry, cs.args) + "\n")
	if strings.HasPrefix(cs.text, "if ") && strings.Contains(cs.text, opsName+".") {
		// the call is already another kernel's dispatch (a template's primary
		// beside its float16 specialisation): its if becomes an elif, so its
		// lines keep the indentation they were laid out for
		b.WriteString(indent + "el" + cs.text)
		return b.String(), true
	}
	b.WriteString(indent + "else:\n")
	b.WriteString(in + strings.ReplaceAll(cs.text, "\n", "\n    "))
	return b.String(), true
}

// reRelativeImport is a relative import: the file is a package's module,
// also in a namespace package (a folder without __init__.py).
var reRelativeImport = regexp.MustCompile(`(?m)^[ \t]*from[ \t]+\.`)

// addImport imports the generated module after the file's last top-level
// import (an empty line after it where code follows, as ruff format wants).
func addImport(s, mod, file string, read func(string) ([]byte, bool)) string {
	dir := path.Dir(file)
	line := "import " + mod
	if _, ok := read(path.Join(dir, "__init__.py")); (ok || reRelativeImport.MatchString(s)) && dir != "." {
		line = "from . import " + mod
	}
	if regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `\b`).MatchString(s) {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	last := -1
	inDoc := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(l, "def ") || strings.HasPrefix(l, "class ") || strings.HasPrefix(l, "@") {
			break
		}
		if strings.Count(t, `"""`)%2 == 1 {
			inDoc = !inDoc
		}
		if !inDoc && (strings.HasPrefix(l, "import ") || strings.HasPrefix(l, "from ")) && !strings.HasSuffix(t, "(") {
			last = i
		}
	}
	ins := line + "  # pallasify: proven Pallas kernel for tpu tensors\n"
	before := strings.Join(lines[:last+1], "")
	return before + ins + BlankAfter(s, len(before), "") + s[len(before):]
}

var (
	reLoadAssign = regexp.MustCompile(`(?m)^(\w+)\s*=\s*((?:[\w.]+\.)?load(?:_inline)?\s*\()`)
	reExtImport  = regexp.MustCompile(`(?m)^(from\s+[\w.]+\s+import\s+(_C|_ext|\w*_cuda)\b[^\n]*|import\s+[\w.]+\.(_C|_ext|\w*_cuda)\b[^\n]*)$`)
	// functions imported from a compiled extension: from ._C import nms, roi_align as ra
	reExtFromImport = regexp.MustCompile(`(?m)^from[ \t]+((?:[\w.]*\.)?(?:_C|_ext|\w*_cuda))[ \t]+import[ \t]+` +
		`(\w+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*\w+(?:[ \t]+as[ \t]+\w+)?)*)[ \t]*(?:#[^\n]*)?$`)
)

// reLoaderAssign binds a module-level name to a compiled extension through
// a loader registry (mmcv: ext_module = ext_loader.load_ext("_ext", [...])).
var reLoaderAssign = regexp.MustCompile(`(?m)^(\w+)[ \t]*=[ \t]*(?:[\w.]+\.)?load_ext[ \t]*\(`)

// extFunctions maps each name src binds to a function imported from a
// compiled extension (from ._C import nms as _nms: "_nms" -> "nms").
func extFunctions(src string) map[string]string {
	out := map[string]string{}
	for _, m := range reExtFromImport.FindAllStringSubmatch(src, -1) {
		for _, item := range strings.Split(m[2], ",") {
			f := strings.Fields(item)
			switch len(f) {
			case 1:
				out[f[0]] = f[0]
			case 3:
				out[f[2]] = f[0]
			}
		}
	}
	return out
}

// guardExtension makes a module-level extension load or import survive a
// machine without CUDA. With lazy (the file's directory has an ops module),
// a load/load_inline is deferred until the CUDA path first uses the
// extension (_pallas_ops.lazy_extension), so no device probe is needed and
// a tpu process never builds it; without, it runs only when CUDA is
// available. An import of a compiled extension tolerates ImportError. It
// reports whether it made a load lazy.
func guardExtension(s string, lazy bool) (string, bool) {
	if strings.Contains(s, "pallasify: guarded") {
		return s, false
	}
	lazied := false
	if m := reLoadAssign.FindStringSubmatchIndex(s); m != nil {
		start := m[0]
		open := m[5] - 1
		args, end, ok := splitArgs(s, open)
		if ok {
			name := s[m[2]:m[3]]
			call := s[m[4]:end]
			var g string
			if lazy {
				g = "# pallasify: guarded (built when the CUDA path first uses it)\n" +
					lazyLoad(name, s[m[4]:open], call, args)
				lazied = true
			} else {
				torch := "torch"
				if !regexp.MustCompile(`(?m)^import torch\s*$`).MatchString(s) {
					torch = `__import__("torch")`
				}
				g = fmt.Sprintf("# pallasify: guarded (built only where CUDA is; tpu tensors use Pallas)\n%s = None\n"+
					"if %s.cuda.is_available():\n    %s", name, torch, strings.ReplaceAll(s[start:end], "\n", "\n    "))
			}
			s = s[:start] + BlankBefore(s, start, g) + g + s[end:]
		}
	}
	if m := reExtImport.FindStringSubmatchIndex(s); m != nil {
		stmt := s[m[0]:m[1]]
		var name string
		if m[4] >= 0 {
			name = s[m[4]:m[5]]
		} else if m[6] >= 0 {
			name = s[m[6]:m[7]]
		}
		g := importGuard(stmt, name+" = None")
		if strings.HasPrefix(stmt, "import ") {
			g = importGuard(stmt, "pass")
		}
		s = s[:m[0]] + BlankBefore(s, m[0], g) + g + s[m[1]:]
	}
	if m := reLoaderAssign.FindStringSubmatchIndex(s); m != nil {
		if _, end, ok := splitArgs(s, m[1]-1); ok {
			name := s[m[2]:m[3]]
			g := importGuard(strings.ReplaceAll(s[m[0]:end], "\n", "\n    "), name+" = None")
			s = s[:m[0]] + BlankBefore(s, m[0], g) + g + s[end:]
		}
	}
	if m := reExtFromImport.FindStringSubmatchIndex(s); m != nil {
		stmt := s[m[0]:m[1]]
		bound := sortedKeys(extFunctions(stmt))
		g := importGuard(stmt, strings.Join(bound, " = ")+" = None")
		s = s[:m[0]] + BlankBefore(s, m[0], g) + g + s[m[1]:]
	}
	return s, lazied
}

// importGuard is stmt (a module-level import or load of the CUDA
// extension) under try, with fallback (what binds its names) where it
// raises ImportError.
func importGuard(stmt, fallback string) string {
	return "try:\n    " + stmt + "\nexcept ImportError:  # pallasify: guarded (CUDA extension not built; tpu tensors use Pallas)\n    " + fallback
}

// lazyLoad is `name = _pallas_ops.lazy_extension(lambda: call)` as ruff
// format writes it: on one line where that fits, else the lambda on a line
// of its own, call re-indented (a one-line call too long there has its
// arguments args wrapped, pyCall). callee is the call up to its opening
// parenthesis.
func lazyLoad(name, callee, call string, args []string) string {
	head := name + " = " + opsName + ".lazy_extension("
	if one := head + "lambda: " + call + ")"; !strings.Contains(call, "\n") && len(one) <= maxLine {
		return one
	}
	body := "    lambda: " + strings.ReplaceAll(call, "\n", "\n    ")
	magic := len(args) > 0 && args[len(args)-1] == ""
	if !strings.Contains(call, "\n") && len(body) > maxLine && !magic {
		body = pyCall("    ", "lambda: "+callee, args)
	}
	return head + "\n" + body + "\n)"
}

// reRegistration is a torch.library registration that looks up an existing
// op by its qualified name ("ns::op"): group 1 is the registration function,
// group 2 the namespace.
var reRegistration = regexp.MustCompile(`\btorch\.library\.(register_fake|register_autograd|register_kernel|` +
	`register_torch_dispatch|register_vmap|impl_abstract|impl)\(\s*(?:["'])(\w+)::`)

// guardRegistrations makes the repository's torch.library registrations for
// ops of the given namespaces (those its CUDA extension defines) run only
// where the op is defined: torch.library.register_fake("ns::op") becomes
// _pallas_ops.if_op_defined(torch.library.register_fake, "ns::op"), the same
// registration where the extension was loaded and a no-op where it was not
// built (register_fake refuses an op torch does not know, so the package
// would not import there). It reports whether it guarded one.
func guardRegistrations(s string, namespaces []string) (string, bool) {
	var b strings.Builder
	last := 0
	for _, m := range reRegistration.FindAllStringSubmatchIndex(s, -1) {
		if !slices.Contains(namespaces, s[m[4]:m[5]]) {
			continue
		}
		// the space after the parenthesis stays where it was: a call
		// split over lines keeps its layout
		arg := strings.IndexByte(s[m[0]:m[1]], '(') + m[0] + 1
		for arg < len(s) && (s[arg] == ' ' || s[arg] == '\t' || s[arg] == '\n') {
			arg++
		}
		b.WriteString(s[last:m[0]])
		fmt.Fprintf(&b, "%s.if_op_defined(%storch.library.%s, ", opsName, s[strings.IndexByte(s[m[0]:m[1]], '(')+m[0]+1:arg], s[m[2]:m[3]])
		last = arg
	}
	if last == 0 {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// autogradPair links a forward kernel's plan to its proven backward.
type autogradPair struct {
	bwd   *plan
	argOf []bwdArg // what the backward gets for each of its host parameters
}

// bwdArg is what the backward kernel's host function gets for one of its
// parameters in the forward op's backward.
type bwdArg struct {
	kind   bwdArgKind
	saved  int    // bwdSaved: position among the forward's tensors (ctx.saved_tensors)
	static string // bwdStatic: the forward's static scalar, kept on ctx
}

type bwdArgKind int

const (
	bwdGrad   bwdArgKind = iota // the incoming gradient
	bwdSaved                    // a tensor input of the forward
	bwdStatic                   // a static scalar of the forward
)

// autogradPairs finds forward/backward host functions (…forward/…backward,
// …fwd/…bwd) that are both proven, and maps the backward's parameters to the
// forward's inputs and the incoming gradient.
func autogradPairs(plans []*plan) map[*plan]*autogradPair {
	out := map[*plan]*autogradPair{}
	for _, f := range plans {
		// one tensor input: the backward's one result is its gradient
		if len(f.host.returns) != 1 || len(f.tensors) != 1 {
			continue
		}
		for _, b := range plans {
			if b == f || b.dir != f.dir || !isBackwardOf(f.host.name, b.host.name) || len(b.host.returns) != 1 {
				continue
			}
			ap := &autogradPair{bwd: b}
			grads := 0
			for _, bp := range b.host.params {
				idx := -1
				for i, fp := range f.host.params {
					if fp.name == bp.name {
						idx = i
					}
				}
				switch {
				case idx >= 0 && bp.tensor:
					pos := 0
					for j, ti := range f.tensors {
						if ti == idx {
							pos = j
						}
					}
					ap.argOf = append(ap.argOf, bwdArg{kind: bwdSaved, saved: pos})
				case idx >= 0:
					ap.argOf = append(ap.argOf, bwdArg{kind: bwdStatic, static: bp.name})
				case bp.tensor:
					ap.argOf = append(ap.argOf, bwdArg{kind: bwdGrad})
					grads++
				default:
					grads = 99
				}
			}
			if grads != 1 {
				continue
			}
			out[f] = ap
		}
	}
	return out
}

func isBackwardOf(fwd, bwd string) bool {
	for _, r := range [][2]string{{"forward", "backward"}, {"fwd", "bwd"}, {"Forward", "Backward"}} {
		if strings.Contains(fwd, r[0]) && strings.Replace(fwd, r[0], r[1], 1) == bwd {
			return true
		}
	}
	return fwd+"_backward" == bwd || fwd+"_bwd" == bwd
}
