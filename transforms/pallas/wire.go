package pallas

import (
	"context"
	"fmt"
	"path"
	"regexp"
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
}

type plan struct {
	wk       WireKernel
	host     *hostFn
	pyname   string
	ns       string
	modName  string // _pallas_<kernel>
	entry    string
	sites    []callSite
	dir      string
	static   []int // host param indexes passed statically (scalars)
	tensors  []int // host param indexes of tensors
	outShape map[string]string
}

// Wire generates, for every proven kernel whose Python call it can map, a
// module next to the call site (the Pallas kernel, a JAX function, a
// TorchTPU jax_op registration, register_fake for shape-following outputs,
// register_autograd for a proven forward/backward pair) and rewrites the call
// to dispatch on the tensor's device type: "tpu" → the Pallas op, anything
// else → the original call, unchanged. The extension's import or load is
// guarded so the package imports where CUDA is missing. read returns a
// file's current content; pyFiles are the tree's Python files.
func Wire(ctx context.Context, ks []WireKernel, read func(p string) ([]byte, bool), pyFiles []string) ([]WireFile, []Wired, []WireProblem) {
	var probs []WireProblem
	var plans []*plan
	sort.Slice(ks, func(i, j int) bool { return ks[i].Kernel.ID < ks[j].Kernel.ID })
	for _, wk := range ks {
		p, err := planKernel(ctx, wk, read, pyFiles)
		if err != nil {
			probs = append(probs, WireProblem{Kernel: wk.Kernel.ID, Path: wk.Kernel.Path, Message: err.Error()})
			continue
		}
		plans = append(plans, p)
	}
	files := map[string][]byte{}
	get := func(p string) ([]byte, bool) {
		if b, ok := files[p]; ok {
			return b, true
		}
		return read(p)
	}
	var out []WireFile
	var wired []Wired
	pairs := autogradPairs(plans)
	type siteOf struct {
		p  *plan
		cs callSite
	}
	byFile := map[string][]siteOf{}
	count := map[*plan]int{}
	var ok []*plan
	opsParts := map[string][]string{}
	opsPlans := map[string][]*plan{}
	for _, p := range plans {
		mod, ops, err := p.module(pairs[p])
		if err != nil {
			probs = append(probs, WireProblem{Kernel: p.wk.Kernel.ID, Path: p.wk.Kernel.Path, Message: err.Error()})
			continue
		}
		out = append(out, WireFile{Path: p.modPath(), Content: []byte(mod), Generated: true})
		for _, cs := range p.sites {
			byFile[cs.file] = append(byFile[cs.file], siteOf{p, cs})
		}
		ok = append(ok, p)
		opsParts[p.dir] = append(opsParts[p.dir], ops)
		opsPlans[p.dir] = append(opsPlans[p.dir], p)
	}
	for _, dir := range sortedKeys(opsParts) {
		_, pkg := read(path.Join(dir, "__init__.py"))
		pkg = pkg && dir != "."
		op := path.Join(dir, opsName+".py")
		if dir == "." {
			op = opsName + ".py"
		}
		out = append(out, WireFile{Path: op, Content: []byte(opsModule(dir, pkg, opsPlans[dir], opsParts[dir])), Generated: true})
	}
	// rewrite call sites, last first so spans stay valid
	for _, f := range sortedKeys(byFile) {
		src, found := get(f)
		if !found {
			continue
		}
		sites := byFile[f]
		sort.Slice(sites, func(i, j int) bool { return sites[i].cs.start > sites[j].cs.start })
		s := string(src)
		var mods []string
		for _, x := range sites {
			cs := x.cs
			if cs.end > len(s) || s[cs.start:cs.end] != cs.text {
				probs = append(probs, WireProblem{Kernel: x.p.wk.Kernel.ID, Path: f, Message: "call site moved; not rewritten"})
				continue
			}
			s = s[:cs.start] + x.p.dispatch(cs) + s[cs.end:]
			count[x.p]++
			mods = append(mods, opsName)
		}
		sort.Strings(mods)
		for i, m := range mods {
			if i == 0 || mods[i-1] != m {
				s = addImport(s, m, f, read)
			}
		}
		files[f] = []byte(s)
	}
	for _, p := range ok {
		wired = append(wired, Wired{Kernel: p.wk.Kernel.ID, Module: p.modPath(), Entry: p.entry, Sites: count[p]})
	}
	// guard the extensions' imports and loads
	for _, f := range pyFiles {
		src, ok := get(f)
		if !ok {
			continue
		}
		touched := false
		for _, p := range plans {
			for _, s := range p.sites {
				touched = touched || s.file == f
			}
			touched = touched || p.wk.Kernel.Path == f
		}
		if !touched {
			continue
		}
		if g := guardExtension(string(src)); g != string(src) {
			files[f] = []byte(g)
		}
	}
	for _, f := range sortedKeys(files) {
		out = append(out, WireFile{Path: f, Content: files[f]})
	}
	return out, wired, probs
}

func planKernel(ctx context.Context, wk WireKernel, read func(string) ([]byte, bool), pyFiles []string) (*plan, error) {
	k := wk.Kernel
	if k.Spec == nil {
		return nil, fmt.Errorf("no spec")
	}
	srcB, ok := read(k.Path)
	if !ok {
		return nil, fmt.Errorf("cannot read %s", k.Path)
	}
	src := string(srcB)
	host, err := findHost(src, k)
	if err != nil {
		return nil, err
	}
	if len(host.args) != len(k.Spec.Params) {
		return nil, fmt.Errorf("the launch passes %d arguments, the kernel takes %d", len(host.args), len(k.Spec.Params))
	}
	p := &plan{wk: wk, host: host, modName: "_pallas_" + sanitize(k.Name), outShape: map[string]string{}}
	p.pyname, p.ns = pyName(src, host.name)
	p.entry = sanitize(p.pyname)
	used := map[int]bool{}
	for i, prm := range k.Spec.Params {
		a := host.args[i]
		switch {
		case prm.Kind == "pointer" && prm.Role != "output":
			if a.param < 0 || !host.params[a.param].tensor {
				return nil, fmt.Errorf("kernel argument %s is not one of %s's tensor parameters", prm.Name, host.name)
			}
			used[a.param] = true
		case prm.Kind == "pointer":
			if a.tensor == "" || a.param >= 0 {
				return nil, fmt.Errorf("output %s is not allocated by %s", prm.Name, host.name)
			}
			if a.like != "" {
				p.outShape[prm.Name] = a.like
			}
		case prm.Role == "scalar":
			if a.param < 0 || host.params[a.param].tensor {
				return nil, fmt.Errorf("scalar %s is not a parameter of %s", prm.Name, host.name)
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
		if !used[i] && hp.tensor {
			return nil, fmt.Errorf("tensor %s of %s does not reach the kernel", hp.name, host.name)
		}
	}
	if len(p.tensors) == 0 {
		return nil, fmt.Errorf("%s takes no tensor", host.name)
	}
	if len(host.returns) == 0 {
		return nil, fmt.Errorf("%s returns nothing the kernel writes", host.name)
	}
	for _, r := range host.returns {
		if outputParam(k, host, r) == nil {
			return nil, fmt.Errorf("%s returns %q, which is not a kernel output", host.name, r)
		}
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
				callee = regexp.MustCompile(`^` + regexp.QuoteMeta(m[1]) + `\.` + regexp.QuoteMeta(p.pyname) + `$`)
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
		ts.Walk(tree.Root(), func(n *ts.Node) bool {
			if n.Type() != "call" {
				return true
			}
			fn := ts.Text(n.ChildByFieldName("function"), src)
			if !callee.MatchString(fn) {
				return true
			}
			var args []string
			simple := true
			for _, a := range ts.Children(n.ChildByFieldName("arguments")) {
				if a.Type() == "comment" {
					continue
				}
				if a.Type() == "keyword_argument" || a.Type() == "list_splat" || a.Type() == "dictionary_splat" {
					simple = false
				}
				args = append(args, ts.Text(a, src))
			}
			if simple && len(args) == len(p.host.params) {
				sites = append(sites, callSite{file: f, start: int(n.StartByte()), end: int(n.EndByte()), text: ts.Text(n, src), args: args})
			}
			return false
		})
		tree.Close()
	}
	return sites, nil
}

// opsName is the per-directory module of TorchTPU registrations.
const opsName = "_pallas_ops"

var reSimpleArg = regexp.MustCompile(`^[\w.]+$|^-?[\d.]+(e-?\d+)?$`)

func (p *plan) dispatch(cs callSite) string {
	for _, a := range cs.args {
		if !reSimpleArg.MatchString(strings.TrimSpace(a)) {
			// arguments with effects would run twice: bind them once
			return fmt.Sprintf("%s.%s_dispatch(%s, lambda: %s)", opsName, p.entry, strings.Join(cs.args, ", "), cs.text)
		}
	}
	first := cs.args[p.tensors[0]]
	return fmt.Sprintf("(%s.%s(%s) if %s.device.type == \"tpu\" else %s)", opsName, p.entry, strings.Join(cs.args, ", "), first, cs.text)
}

// addImport imports the generated module after the file's last top-level import.
func addImport(s, mod, file string, read func(string) ([]byte, bool)) string {
	dir := path.Dir(file)
	line := "import " + mod
	if _, ok := read(path.Join(dir, "__init__.py")); ok && dir != "." {
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
	if last < 0 {
		return ins + s
	}
	return strings.Join(lines[:last+1], "") + ins + strings.Join(lines[last+1:], "")
}

var (
	reLoadAssign = regexp.MustCompile(`(?m)^(\w+)\s*=\s*((?:[\w.]+\.)?load(?:_inline)?\s*\()`)
	reExtImport  = regexp.MustCompile(`(?m)^(from\s+[\w.]+\s+import\s+(_C|_ext|\w*_cuda)\b[^\n]*|import\s+[\w.]+\.(_C|_ext|\w*_cuda)\b[^\n]*)$`)
)

// guardExtension makes a module-level extension load or import survive a
// machine without CUDA: a load/load_inline runs only when CUDA is there, an
// import of a compiled extension tolerates ImportError.
func guardExtension(s string) string {
	if strings.Contains(s, "pallasify: guarded") {
		return s
	}
	if m := reLoadAssign.FindStringSubmatchIndex(s); m != nil {
		start := m[0]
		open := m[5] - 1
		_, end, ok := splitArgs(s, open)
		if ok {
			name := s[m[2]:m[3]]
			stmt := s[start:end]
			torch := "torch"
			if !regexp.MustCompile(`(?m)^import torch\s*$`).MatchString(s) {
				torch = `__import__("torch")`
			}
			indented := strings.ReplaceAll(stmt, "\n", "\n    ")
			g := fmt.Sprintf("%s = None  # pallasify: guarded — the CUDA extension is built only where CUDA exists; tpu tensors use Pallas\nif %s.cuda.is_available():\n    %s", name, torch, indented)
			s = s[:start] + g + s[end:]
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
		g := fmt.Sprintf("try:\n    %s\nexcept ImportError:  # pallasify: guarded — the compiled CUDA extension is not built here; tpu tensors use Pallas\n    %s = None", stmt, name)
		if strings.HasPrefix(stmt, "import ") {
			g = fmt.Sprintf("try:\n    %s\nexcept ImportError:  # pallasify: guarded — the compiled CUDA extension is not built here; tpu tensors use Pallas\n    pass", stmt)
		}
		s = s[:m[0]] + g + s[m[1]:]
	}
	return s
}

// autogradPair links a forward kernel's plan to its proven backward.
type autogradPair struct {
	bwd   *plan
	argOf []string // for each backward host parameter: "grad", "saved:<i>" or "static:<name>"
}

// autogradPairs finds forward/backward host functions (…forward/…backward,
// …fwd/…bwd) that are both proven, and maps the backward's parameters to the
// forward's inputs and the incoming gradient.
func autogradPairs(plans []*plan) map[*plan]*autogradPair {
	out := map[*plan]*autogradPair{}
	for _, f := range plans {
		if len(f.host.returns) != 1 {
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
					ap.argOf = append(ap.argOf, fmt.Sprintf("saved:%d", pos))
				case idx >= 0:
					ap.argOf = append(ap.argOf, "static:"+bp.name)
				case bp.tensor:
					ap.argOf = append(ap.argOf, "grad")
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

var reDocHead = regexp.MustCompile(`(?s)^"""(.*?)"""\n`)

func (p *plan) module(pair *autogradPair) (string, string, error) {
	k := p.wk.Kernel
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	notes := ""
	if m := reDocHead.FindStringSubmatch(p.wk.Module); m != nil {
		if i := strings.Index(m[1], "\nNote:"); i >= 0 {
			notes = strings.TrimSpace(m[1][i:])
		}
	}
	call := p.pyname
	if p.ns != "" {
		call = "torch.ops." + p.ns + "." + p.pyname
	}
	w(`"""Pallas TPU replacement for CUDA kernel %s (%s:%d, id %s).`, k.Name, k.Path, k.Line, k.ID)
	w("")
	w("Generated by pallasify; drafted by %s. Verdict of the numeric validator against", p.wk.Drafter)
	w("the original kernel (run on the CUDA-on-CPU emulator):")
	w("    %s", p.wk.Verdict)
	w("Re-run the validation:")
	w("    pallasify validate --repo . %s --candidate %s/%s.py", k.ID, p.dir, p.modName)
	w("")
	w("Calls of %s dispatch here for tensors on \"tpu\"; every other device keeps", call)
	w("the original CUDA path unchanged.")
	if notes != "" {
		w("")
		w("%s", notes)
	}
	w(`"""`)
	body := reDocHead.ReplaceAllString(p.wk.Module, "")
	b.WriteString(body)
	w("")
	w("")
	// JAX function
	var tparams, sparams, allParams []string
	for _, i := range p.tensors {
		tparams = append(tparams, p.host.params[i].name)
	}
	for _, i := range p.static {
		sparams = append(sparams, p.host.params[i].name)
	}
	for _, hp := range p.host.params {
		allParams = append(allParams, hp.name)
	}
	var sig []string
	for _, hp := range p.host.params {
		if hp.tensor {
			sig = append(sig, hp.name+": jax.Array")
		} else {
			sig = append(sig, hp.name+": "+pyScalarType(hp.ctype))
		}
	}
	ret := "jax.Array"
	if len(p.host.returns) > 1 {
		ret = "tuple[" + strings.TrimSuffix(strings.Repeat("jax.Array, ", len(p.host.returns)), ", ") + "]"
	}
	w("def %s_jax(%s, *, interpret=False) -> %s:", p.entry, strings.Join(sig, ", "), ret)
	w(`    """JAX function: the same arguments and results as %s."""`, call)
	spec := k.Spec
	reshaped := map[string]string{}
	for i, prm := range spec.Params {
		if prm.Kind != "pointer" || prm.Role == "output" {
			continue
		}
		hp := p.host.params[p.host.args[i].param].name
		v := hp + "_k"
		switch r := len(prm.Shape); r {
		case 1:
			w("    %s = %s.reshape(-1)", v, hp)
		default:
			w("    %s = %s.reshape((-1,) + tuple(%s.shape[%d:]))", v, hp, hp, -(r - 1))
		}
		reshaped[prm.Name] = v
	}
	for _, s := range spec.Symbols {
		src := ""
		for _, prm := range spec.Params {
			if v, ok := reshaped[prm.Name]; ok && src == "" {
				for j, dim := range prm.Shape {
					if strings.TrimSpace(dim) == s {
						src = fmt.Sprintf("%s.shape[%d]", v, j)
					}
				}
			}
		}
		if src == "" {
			return "", "", fmt.Errorf("size %s cannot be read from the tensors passed to %s", s, call)
		}
		w("    s_%s = %s", s, src)
	}
	var items []string
	for i, prm := range spec.Params {
		switch {
		case prm.Kind == "pointer" && prm.Role == "output":
		case prm.Kind == "pointer":
			items = append(items, fmt.Sprintf("%q: %s", prm.Name, reshaped[prm.Name]))
		case prm.Role == "size":
			items = append(items, fmt.Sprintf("%q: %s", prm.Name, exprPyString(prm.Expr)))
		default:
			hp := p.host.params[p.host.args[i].param]
			conv := "float"
			if prm.DType != "float32" && prm.DType != "float64" && prm.DType != "float16" && prm.DType != "bfloat16" {
				conv = "int"
			}
			items = append(items, fmt.Sprintf("%q: %s(%s)", prm.Name, conv, hp.name))
		}
	}
	w("    res = run({%s}, interpret=interpret)", strings.Join(items, ", "))
	var outs []string
	for _, r := range p.host.returns {
		op := outputParam(k, p.host, r)
		o := fmt.Sprintf("res[%q]", op.Name)
		if like, ok := p.outShape[op.Name]; ok {
			o += ".reshape(" + like + ".shape)"
		}
		outs = append(outs, o)
	}
	w("    return %s", strings.Join(outs, ", "))
	kernelMod := b.String()
	b.Reset()
	// TorchTPU registration (in the directory's _pallas_ops module)
	w("")
	w("")
	w("# ---- %s: %s (kernel %s, module %s) ----", p.entry, call, k.Name, p.modName)
	w("")
	w("")
	w("@functools.lru_cache(maxsize=None)")
	w("def _%s_op(%s):", p.entry, strings.Join(sparams, ", "))
	w("    if _tpu_pallas is None:")
	w(`        raise RuntimeError("torch_tpu is not installed: tpu tensors need it to run the Pallas kernel")`)
	var tsig []string
	for _, t := range tparams {
		tsig = append(tsig, t+": jax.Array")
	}
	var callArgs []string
	for _, hp := range p.host.params {
		callArgs = append(callArgs, hp.name)
	}
	w("")
	w("    def fn(%s) -> %s:", strings.Join(tsig, ", "), ret)
	w("        return %s.%s_jax(%s)", p.modName, p.entry, strings.Join(callArgs, ", "))
	w("")
	name := fmt.Sprintf(`"pallasify::%s"`, p.entry)
	if len(sparams) > 0 {
		var keys []string
		for _, s := range sparams {
			keys = append(keys, "_key("+s+")")
		}
		name = fmt.Sprintf(`"pallasify::%s_" + "_".join([%s])`, p.entry, strings.Join(keys, ", "))
	}
	w("    op = _tpu_pallas.jax_op(%s, fn)", name)
	allLike := true
	var fakes []string
	for _, r := range p.host.returns {
		op := outputParam(k, p.host, r)
		like, ok := p.outShape[op.Name]
		if !ok {
			allLike = false
			break
		}
		fakes = append(fakes, like+".new_empty("+like+".shape)")
	}
	if allLike {
		w("    # outputs follow an input's shape: a fake that works for dynamic shapes")
		w("    op.register_fake(lambda %s: %s)", strings.Join(tparams, ", "), strings.Join(fakes, ", "))
	}
	if pair != nil {
		var bargs []string
		for i, a := range pair.argOf {
			switch {
			case a == "grad":
				bargs = append(bargs, "grad")
			case strings.HasPrefix(a, "saved:"):
				bargs = append(bargs, "ctx.saved_tensors["+strings.TrimPrefix(a, "saved:")+"]")
			default:
				bargs = append(bargs, strings.TrimPrefix(a, "static:"))
			}
			_ = i
		}
		grads := make([]string, len(tparams))
		for i := range grads {
			grads[i] = "None"
		}
		grads[0] = pair.bwd.entry + "(" + strings.Join(bargs, ", ") + ")"
		w("")
		w("    # the backward kernel %s is proven too: gradients run on TPU as well", pair.bwd.wk.Kernel.Name)
		w("    def _setup(ctx, inputs, output):")
		w("        ctx.save_for_backward(*inputs)")
		w("")
		w("    def _backward(ctx, grad):")
		w("        return %s", strings.Join(grads, ", ")+",")
		w("")
		w("    op.register_autograd(_backward, setup_context=_setup)")
	}
	w("    return op")
	w("")
	w("")
	w("def %s(%s):", p.entry, strings.Join(allParams, ", "))
	w(`    """%s for tensors on "tpu" (the proven Pallas kernel through jax_op)."""`, call)
	if len(sparams) > 0 {
		w("    return _%s_op(%s)(%s)", p.entry, strings.Join(sparams, ", "), strings.Join(tparams, ", "))
	} else {
		w("    return _%s_op()(%s)", p.entry, strings.Join(tparams, ", "))
	}
	w("")
	w("")
	w("def %s_dispatch(%s, original):", p.entry, strings.Join(allParams, ", "))
	w(`    """tpu → the Pallas op; any other device → original() (the CUDA path, unchanged)."""`)
	w("    if %s.device.type == \"tpu\":", tparams[0])
	w("        return %s(%s)", p.entry, strings.Join(allParams, ", "))
	w("    return original()")
	return kernelMod, b.String(), nil
}

// opsModule is the directory's _pallas_ops module: the TorchTPU
// registrations (jax_op, register_fake, register_autograd) and the device
// dispatch of every wired kernel there. The kernel modules it imports hold
// exactly the validated code (they pass the validator's static checks).
func opsModule(dir string, pkg bool, plans []*plan, parts []string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w(`"""TorchTPU registrations of the proven Pallas kernels in %s, generated by pallasify.`, dir)
	w("")
	w("Each op is registered through torch_tpu's jax_op on first use; the call sites")
	w("dispatch here only for tensors on \"tpu\" and keep the original CUDA path otherwise.")
	w("The kernels themselves (and their validator verdicts) are in:")
	for _, p := range plans {
		w("    %s.py (%s)", p.modName, p.wk.Kernel.Name)
	}
	w(`"""`)
	w("import functools")
	w("")
	w("import jax")
	w("")
	if pkg {
		w("try:")
		for _, p := range plans {
			w("    from . import %s", p.modName)
		}
		w("except ImportError:  # loaded outside its package")
		for _, p := range plans {
			w("    import %s", p.modName)
		}
	} else {
		for _, p := range plans {
			w("import %s", p.modName)
		}
	}
	w("")
	w("try:  # the jax_op import location moves between torch_tpu releases")
	w("    from torch_tpu.experimental import pallas as _tpu_pallas")
	w("except ImportError:")
	w("    try:")
	w("        from torch_tpu._internal import pallas as _tpu_pallas")
	w("    except ImportError:")
	w("        _tpu_pallas = None")
	w("")
	w("")
	w("def _key(v):")
	w(`    return "".join(c if c.isalnum() else "_" for c in repr(v))`)
	for _, part := range parts {
		b.WriteString(part)
	}
	return b.String()
}

func pyScalarType(ct string) string {
	switch strings.TrimSpace(ct) {
	case "double", "float":
		return "float"
	case "bool":
		return "bool"
	}
	return "int"
}
