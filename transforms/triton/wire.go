package triton

import (
	"context"
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Wiring codes: why a proven Triton kernel was not wired at its launch.
const (
	CodeWireLaunch = "PTR101" // the launch is not a statement of its own (a one-line if, an expression)
	CodeWireSpec   = "PTR102" // a size of the proven spec cannot be read at the launch
	CodeWireFound  = "PTR103" // the launch recorded at discovery is not in the current source
)

// OpsModule is the per-directory module of the TorchTPU ops of wired
// Triton kernels (apart from the CUDA wiring's _pallas_ops).
const OpsModule = "_pallas_triton_ops"

// WireKernel is one proven Triton kernel to wire at its launches.
type WireKernel struct {
	Kernel *Kernel
	ID     string
	Spec   *kernels.Spec
	// Call is the kernel-mode call the proof ran (its Grid says which
	// program-id axis walks the rows).
	Call Call
	// Mode and Block are the translation's shape (ModeRow, ModeFlat) and the
	// constexpr of its arange width.
	Mode, Block string
	// Free are the constexprs the candidate does not depend on: not checked
	// at the launch.
	Free []string
	// Tiled: the kernel walks each row in column tiles (any tile width gives
	// the same stores).
	Tiled bool
	// Drafter drafted Module: "triton-rules" (the default) or the LLM
	// drafter's name.
	Drafter string
	// Module is the proven candidate; Verdict the validator's one line.
	Module  string
	Verdict string
	Cases   []pallas.ValidatedCase
	TPU     map[string]pallas.ChipCompile
}

// wirePlan is one kernel wired in one directory.
type wirePlan struct {
	wk      WireKernel
	dir     string
	pkg     bool // dir is a package: relative imports
	entry   string
	modName string
	ns      string
	// launches in the files of dir, by path.
	launches map[string][]*Launch
}

// Wire gives every launch of a proven kernel a TPU branch: in the function
// that launches it, tensors on "tpu" go through the proven Pallas kernel,
// registered with torch.tpu.pallas.jax_op on first use (the directory's
// _pallas_triton_ops module), while every other device runs the original
// launch statement unchanged (re-indented under else). Next to the launch,
// _pallas_<kernel>.py holds the candidate, its PALLASIFY_KERNEL header and
// <kernel>_jax. The ops module imports only functools at module level, so
// the package imports where jax and torch_tpu are missing. A launch already
// wired is left as it is (a second run changes nothing). read returns a
// file's current content; py are the tree's Python files: those beside an
// ops module (the launching files, the kernels' own, helpers they import)
// import triton only where it is installed (lazy.go).
func Wire(ctx context.Context, ks []WireKernel, read func(p string) ([]byte, bool), py []string) ([]pallas.WireFile, []pallas.Wired, []pallas.WireProblem) {
	sort.Slice(ks, func(i, j int) bool { return ks[i].ID < ks[j].ID })
	var probs []pallas.WireProblem
	byDir := map[string][]*wirePlan{}
	var dirs []string
	for _, wk := range ks {
		seen := map[string]*wirePlan{}
		for _, l := range wk.Kernel.Launches {
			if len(l.Alternatives) > 0 {
				// one TPU branch would run this kernel's Pallas for the others too
				probs = append(probs, pallas.WireProblem{Kernel: wk.ID, Path: l.Path, Message: refuse(CodeWireLaunch,
					"the launch of %s at %s:%d goes through %s, which may hold %s too: its TPU branch would run %s for them",
					wk.Kernel.Name, l.Path, l.Line, l.Via, strings.Join(l.Alternatives, ", "), wk.Kernel.Name).Error()})
				continue
			}
			dir := path.Dir(l.Path)
			p := seen[dir]
			if p == nil {
				_, pkg := read(path.Join(dir, "__init__.py"))
				entry := pyIdent(wk.Kernel.Name)
				p = &wirePlan{wk: wk, dir: dir, pkg: pkg, entry: entry, modName: "_pallas_" + strings.TrimLeft(entry, "_"),
					ns: opsNS(dir), launches: map[string][]*Launch{}}
				seen[dir] = p
				if len(byDir[dir]) == 0 {
					dirs = append(dirs, dir)
				}
				byDir[dir] = append(byDir[dir], p)
			}
			p.launches[l.Path] = append(p.launches[l.Path], l)
		}
	}
	sort.Strings(dirs)
	edits := map[string][]byte{}
	get := func(p string) ([]byte, bool) {
		if b, ok := edits[p]; ok {
			return b, true
		}
		return read(p)
	}
	var files []pallas.WireFile
	var wired []pallas.Wired
	for _, dir := range dirs {
		var ok []*wirePlan
		for _, p := range byDir[dir] {
			mod, err := p.kernelModule()
			mod = pallas.FormatPython(ctx, mod)
			if err == nil {
				err = p.checkSizes()
			}
			if err != nil {
				probs = append(probs, pallas.WireProblem{Kernel: p.wk.ID, Path: p.wk.Kernel.Path, Message: err.Error()})
				continue
			}
			sites := 0
			var siteErr error
			for _, file := range sortedKeys(p.launches) {
				src, found := get(file)
				if !found {
					siteErr = refuse(CodeWireFound, "%s is not in the tree", file)
					break
				}
				out, n, err := p.rewriteLaunches(ctx, file, src)
				if err != nil {
					siteErr = err
					break
				}
				sites += n
				edits[file] = out
			}
			if siteErr != nil {
				probs = append(probs, pallas.WireProblem{Kernel: p.wk.ID, Path: p.wk.Kernel.Path, Message: siteErr.Error()})
				continue
			}
			modPath := path.Join(dir, p.modName+".py")
			if cur, exists := read(modPath); !exists || !strings.Contains(string(cur), strconv.Quote(p.wk.ID)) {
				files = append(files, pallas.WireFile{Path: modPath, Content: []byte(mod), Generated: true})
			}
			wired = append(wired, pallas.Wired{Kernel: p.wk.ID, Module: modPath, Entry: OpsModule + "." + p.entry, Sites: sites})
			ok = append(ok, p)
		}
		if len(ok) == 0 {
			continue
		}
		for _, f := range py { // the directory's other modules (the kernels' own, helpers) import triton lazily too
			if path.Dir(f) != dir {
				continue
			}
			if src, found := get(f); found {
				if lazy := lazyTriton(ctx, string(src), ok[0].pkg); lazy != string(src) {
					edits[f] = []byte(lazy)
				}
			}
		}
		opsPath := path.Join(dir, OpsModule+".py")
		ops := pallas.FormatPython(ctx, opsModuleSource(dir, ok))
		if cur, exists := read(opsPath); !exists || string(cur) != ops {
			files = append(files, pallas.WireFile{Path: opsPath, Content: []byte(ops), Generated: !exists})
		}
	}
	for _, file := range sortedKeys(edits) {
		if cur, _ := read(file); string(cur) != string(edits[file]) {
			files = append(files, pallas.WireFile{Path: file, Content: edits[file]})
		}
	}
	return files, wired, probs
}

var reNonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

func pyIdent(s string) string { return reNonIdent.ReplaceAllString(s, "_") }

func opsNS(dir string) string {
	if dir == "." || dir == "" {
		return "pallasify_triton"
	}
	return "pallasify_triton_" + pyIdent(dir)
}

// rewriteLaunches gives every launch of the plan's kernel in src its TPU
// branch and the file the ops module import; launches already under one
// are left alone. It returns the new source and the number of launches.
func (p *wirePlan) rewriteLaunches(ctx context.Context, file string, src []byte) ([]byte, int, error) {
	parser := ts.NewParser(ts.Python)
	defer parser.Close()
	tree, err := parser.Parse(ctx, src)
	if err != nil {
		return nil, 0, err
	}
	defer tree.Close()
	root := tree.Root()
	type span struct {
		start, end int
		text       string
	}
	var spans []span
	count := 0
	want := p.launches[file]
	ts.Walk(root, func(n *ts.Node) bool {
		if n.Type() != "call" {
			return true
		}
		l := matchLaunch(n, src, want)
		if l == nil {
			return true
		}
		count++
		if alreadyWired(n, src) {
			return true
		}
		stmt := n.Parent()
		if stmt == nil || stmt.Type() != "expression_statement" {
			err = refuse(CodeWireLaunch, "the launch of %s at %s:%d is not a statement of its own", p.wk.Kernel.Name, file, l.Line)
			return false
		}
		lineStart := int(stmt.StartByte())
		for lineStart > 0 && src[lineStart-1] != '\n' {
			lineStart--
		}
		indent := string(src[lineStart:stmt.StartByte()])
		if strings.TrimSpace(indent) != "" {
			err = refuse(CodeWireLaunch, "the launch of %s at %s:%d shares its line with other code", p.wk.Kernel.Name, file, l.Line)
			return false
		}
		text, berr := p.branch(l, indent, string(src[stmt.StartByte():stmt.EndByte()]))
		if berr != nil {
			err = berr
			return false
		}
		spans = append(spans, span{lineStart, int(stmt.EndByte()), text})
		return true
	})
	if err != nil {
		return nil, 0, err
	}
	if count == 0 {
		return nil, 0, refuse(CodeWireFound, "no launch of %s found in %s", p.wk.Kernel.Name, file)
	}
	out := string(src)
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		out = out[:s.start] + s.text + out[s.end:]
	}
	if len(spans) > 0 {
		out = lazyTriton(ctx, addOpsImport(ctx, out, p.pkg), p.pkg)
	}
	return []byte(out), count, nil
}

// matchLaunch is the launch of want that call n is: same grid, same
// arguments.
func matchLaunch(n *ts.Node, src []byte, want []*Launch) *Launch {
	fn := n.ChildByFieldName("function")
	if fn == nil || fn.Type() != "subscript" {
		return nil
	}
	grid := ts.Text(fn.ChildByFieldName("subscript"), src)
	var args []Arg
	for _, a := range ts.Children(n.ChildByFieldName("arguments")) {
		switch a.Type() {
		case "(", ")", ",", "comment":
		case "keyword_argument":
			args = append(args, Arg{Name: ts.Text(a.ChildByFieldName("name"), src), Expr: ts.Text(a.ChildByFieldName("value"), src)})
		default:
			args = append(args, Arg{Expr: ts.Text(a, src)})
		}
	}
	for _, l := range want {
		if l.Grid != grid || len(l.Args) != len(args) {
			continue
		}
		same := true
		for i := range args {
			same = same && args[i] == l.Args[i]
		}
		if same {
			return l
		}
	}
	return nil
}

// alreadyWired reports a launch in the else branch of an if that sends tpu
// tensors to the ops module (an earlier run's wiring).
func alreadyWired(n *ts.Node, src []byte) bool {
	for x := n.Parent(); x != nil; x = x.Parent() {
		if x.Type() == "else_clause" {
			if ifs := x.Parent(); ifs != nil && ifs.Type() == "if_statement" &&
				strings.Contains(ts.Text(ifs.ChildByFieldName("consequence"), src), OpsModule+".") {
				return true
			}
		}
		if x.Type() == "function_definition" {
			return false
		}
	}
	return false
}

// branch is the launch statement with its TPU branch: the ops call with the
// launch's own arguments and grid, else the statement as it was.
func (p *wirePlan) branch(l *Launch, indent, stmt string) (string, error) {
	dev := p.deviceArg(l)
	if dev == "" {
		return "", refuse(CodeWireLaunch, "the launch of %s at %s:%d passes no input tensor by a plain name", p.wk.Kernel.Name, l.Path, l.Line)
	}
	var args []string
	for _, a := range l.Args {
		if a.Name != "" {
			args = append(args, a.Name+"="+a.Expr)
		} else {
			args = append(args, a.Expr)
		}
	}
	args = append(args, "grid="+l.Grid)
	var b strings.Builder
	fmt.Fprintf(&b, "%sif %s.device.type == \"tpu\":\n", indent, dev)
	call := fmt.Sprintf("%s    %s.%s(%s)", indent, OpsModule, p.entry, strings.Join(args, ", "))
	if len(call) > 100 || strings.Contains(call, "\n") {
		call = fmt.Sprintf("%s    %s.%s(\n%s        %s,\n%s    )", indent, OpsModule, p.entry, indent,
			strings.Join(args, ",\n"+indent+"        "), indent)
	}
	b.WriteString(call + "\n")
	b.WriteString(indent + "else:\n")
	lines := strings.Split(stmt, "\n")
	for i, ln := range lines {
		if i == 0 {
			b.WriteString(indent + "    " + ln)
		} else if ln != "" {
			b.WriteString("\n    " + ln)
		} else {
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}

var rePlainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// deviceArg is the launch's expression for the first input pointer passed
// as a plain name (the tensor whose device picks the branch).
func (p *wirePlan) deviceArg(l *Launch) string {
	roles := map[string]string{}
	for _, sp := range p.wk.Spec.Params {
		if sp.Kind == "pointer" {
			roles[sp.Name] = sp.Role
		}
	}
	var fallback string
	for _, prm := range p.wk.Kernel.Params {
		r, ok := roles[prm.Name]
		if !ok {
			continue
		}
		expr := argFor(l, p.wk.Kernel, prm.Name)
		if expr == "" || !rePlainName.MatchString(expr) {
			continue
		}
		if r != "output" {
			return expr
		}
		if fallback == "" {
			fallback = expr
		}
	}
	return fallback
}

// argFor is the launch's expression for kernel parameter name ("" when the
// launch does not pass it).
func argFor(l *Launch, k *Kernel, name string) string {
	pos := 0
	for _, a := range l.Args {
		if a.Name == name {
			return a.Expr
		}
		if a.Name == "" {
			if pos < len(k.Params) && k.Params[pos].Name == name {
				return a.Expr
			}
			pos++
		}
	}
	return ""
}

// addOpsImport imports the ops module after the module's top-level imports
// (once).
func addOpsImport(ctx context.Context, src string, pkg bool) string {
	imp := "import " + OpsModule
	if pkg {
		imp = "from . import " + OpsModule
	}
	if regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(imp) + `\s*$`).MatchString(src) {
		return src
	}
	parser := ts.NewParser(ts.Python)
	defer parser.Close()
	tree, err := parser.Parse(ctx, []byte(src))
	if err != nil {
		return imp + "\n" + pallas.BlankAfter(src, 0, "") + src
	}
	defer tree.Close()
	// after is src with imp after its import ending at end (an empty line
	// after imp where code follows, as ruff format wants)
	after := func(end int) string {
		nl := ""
		if strings.HasPrefix(src[end:], "\n") {
			nl = pallas.BlankAfter(src, end+1, "")
		}
		return src[:end] + "\n" + imp + nl + src[end:]
	}
	end := -1
	for _, c := range ts.Children(tree.Root()) {
		switch c.Type() {
		case "import_statement", "import_from_statement", "future_import_statement":
			end = int(c.EndByte())
		case "comment":
		case "expression_statement":
			if end < 0 && c.ChildCount() > 0 && c.Child(0).Type() == "string" { // the docstring
				continue
			}
			if end >= 0 {
				return after(end)
			}
			return imp + "\n" + pallas.BlankAfter(src, 0, "") + src
		default:
			if end >= 0 {
				return after(end)
			}
			return imp + "\n" + pallas.BlankAfter(src, 0, "") + src
		}
	}
	if end >= 0 {
		return after(end)
	}
	return imp + "\n" + pallas.BlankAfter(src, 0, "") + src
}

// symbols says how the launch-side ops function gets each size symbol of
// the spec: from a size parameter whose expression is the bare symbol, or
// (rows of a row kernel) from the grid's axis.
func (p *wirePlan) symbols() (map[string]string, error) {
	out := map[string]string{}
	sizes := func(strides bool) {
		for _, sp := range p.wk.Spec.Params {
			if sp.Role != "size" || strings.Contains(strings.ToLower(sp.Name), "stride") != strides {
				continue
			}
			e := strings.TrimSpace(sp.Expr)
			if _, ok := out[e]; !ok && contains(p.wk.Spec.Symbols, e) {
				out[e] = "int(" + sp.Name + ")"
			}
		}
	}
	// the mask bound (a parameter, or a constexpr N: tl.constexpr) before a stride equal to it
	sizes(false)
	for _, name := range sortedKeys(p.wk.Call.Constexprs) {
		e := strings.TrimSpace(p.wk.Call.Constexprs[name])
		if _, ok := out[e]; !ok && contains(p.wk.Spec.Symbols, e) && contains(p.wk.Kernel.Constexprs(), name) {
			out[e] = "int(" + name + ")"
		}
	}
	sizes(true)
	for _, s := range p.wk.Spec.Symbols {
		if _, ok := out[s]; ok {
			continue
		}
		for axis, g := range p.wk.Call.Grid {
			if strings.TrimSpace(g) == s {
				out[s] = fmt.Sprintf("_grid(grid, meta)[%d]", axis)
			}
		}
		if _, ok := out[s]; !ok {
			return nil, refuse(CodeWireSpec, "size %s of %s is neither a parameter nor a grid axis at the launch", s, p.wk.Kernel.Name)
		}
	}
	return out, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

var reScaled = regexp.MustCompile(`^\s*([0-9]+)\s*\*\s*([A-Za-z_][A-Za-z0-9_]*)\s*$`)

var reSizeExpr = regexp.MustCompile(`^[A-Za-z0-9_ +*()-]+$`)

// checkSizes refuses a spec whose sizes the generated Python cannot evaluate.
func (p *wirePlan) checkSizes() error {
	if _, err := p.symbols(); err != nil {
		return err
	}
	for _, sp := range p.wk.Spec.Params {
		if sp.Role == "size" && !reSizeExpr.MatchString(sp.Expr) {
			return refuse(CodeWireSpec, "size %s = %s of %s is not a sum or product of sizes", sp.Name, sp.Expr, p.wk.Kernel.Name)
		}
		if sp.Kind == "pointer" {
			for _, d := range sp.Shape {
				if !reSizeExpr.MatchString(d) {
					return refuse(CodeWireSpec, "shape %v of %s is not a product of sizes", sp.Shape, sp.Name)
				}
			}
		}
	}
	return nil
}

// tensorParams and staticParams are the JAX function's parameters: input
// and inout pointers, then float scalars; outputs the stored pointers in
// parameter order.
func (p *wirePlan) tensorParams() []kernels.Param {
	var out []kernels.Param
	for _, sp := range p.wk.Spec.Params {
		if sp.Kind == "pointer" && sp.Role != "output" {
			out = append(out, sp)
		}
	}
	return out
}

func (p *wirePlan) staticParams() []kernels.Param {
	var out []kernels.Param
	for _, sp := range p.wk.Spec.Params {
		if sp.Kind == "scalar" && sp.Role == "scalar" && sp.Value == nil { // a fixed one is checked at the launch
			out = append(out, sp)
		}
	}
	return out
}

func (p *wirePlan) outputParams() []kernels.Param {
	var out []kernels.Param
	for _, sp := range p.wk.Spec.Params {
		if sp.Kind == "pointer" && (sp.Role == "output" || sp.Role == "inout") {
			out = append(out, sp)
		}
	}
	return out
}

func names(ps []kernels.Param) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

var reWord = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// symExpr is a size expression over the generated code's s_<symbol> names.
func (p *wirePlan) symExpr(e string) string {
	return reWord.ReplaceAllStringFunc(strings.TrimSpace(e), func(w string) string {
		if contains(p.wk.Spec.Symbols, w) {
			return "s_" + w
		}
		return w
	})
}

func (p *wirePlan) shapeTuple(dims []string) string {
	out := make([]string, len(dims))
	for i, d := range dims {
		out[i] = p.symExpr(d)
	}
	return pyTuple(out)
}

func pyTuple(dims []string) string {
	if len(dims) == 1 {
		return "(" + dims[0] + ",)"
	}
	return "(" + strings.Join(dims, ", ") + ")"
}

var reDoc = regexp.MustCompile(`(?s)^"""(.*?)"""\n`)

// kernelModule is _pallas_<kernel>.py: a docstring naming the Triton kernel
// and the verdict, the proven candidate, the PALLASIFY_KERNEL header and
// <kernel>_jax (tensors shaped as the spec says, then static scalars).
func (p *wirePlan) kernelModule() (string, error) {
	k := p.wk.Kernel
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	b.WriteString(`"""` + pallas.WrapText(fmt.Sprintf("Pallas TPU replacement for the Triton kernel %s (id %s).", k.Name, p.wk.ID), 97))
	w("")
	b.WriteString(pallas.WrapText(fmt.Sprintf("Generated by pallasify from %s:%d; drafted by %s. Verdict of the "+
		"numeric validator against the original kernel (run by Triton's interpreter on the CPU):", k.Path, k.Line, p.drafterWords()), 88))
	b.WriteString(pallas.IndentLines("    ", pallas.WrapText(p.wk.Verdict, 84)))
	if line := tpuLine(p.wk.TPU); line != "" {
		w("%s", line)
	}
	w("")
	b.WriteString(pallas.WrapText(fmt.Sprintf("%s_jax is the kernel as a JAX function: its input tensors (shaped as the proven "+
		"spec says), then its float scalars; it returns the stored tensors. The launches of %s send tensors on "+
		"\"tpu\" here through %s.%s; every other device keeps the Triton launch.", p.entry, k.Name, OpsModule, p.entry), 88))
	w(`"""`)
	body := reDoc.ReplaceAllString(p.wk.Module, "")
	if !regexp.MustCompile(`(?m)^import jax\s*$`).MatchString(body) {
		body = "import jax\n" + body
	}
	b.WriteString(pallas.InsertAfterImports(body, "\n"+p.header()))
	w("")
	w("")
	fn, err := p.jaxFunction()
	if err != nil {
		return "", err
	}
	b.WriteString(fn)
	return b.String(), nil
}

// drafterWords names who drafted the candidate in the module's docstring.
func (p *wirePlan) drafterWords() string {
	if p.wk.Drafter == "" || p.wk.Drafter == "triton-rules" {
		return "the Triton rules"
	}
	return "the " + p.wk.Drafter + " drafter from the Triton source"
}

func tpuLine(tpu map[string]pallas.ChipCompile) string {
	if len(tpu) == 0 {
		return ""
	}
	var ok, failed []string
	for c, cc := range tpu {
		if cc.Compiled {
			ok = append(ok, c)
		} else {
			failed = append(failed, c)
		}
	}
	sort.Strings(ok)
	sort.Strings(failed)
	line := "Compiled for TPU without a TPU (deviceless AOT): " + strings.Join(ok, ", ")
	if len(failed) > 0 {
		line += "; failed: " + strings.Join(failed, ", ")
	}
	return line + "."
}

// jaxFunction is <kernel>_jax: the size parameters computed from the
// tensors' shapes, the candidate's run, its stored outputs.
func (p *wirePlan) jaxFunction() (string, error) {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	var sig []string
	for _, t := range p.tensorParams() {
		sig = append(sig, t.Name+": jax.Array")
	}
	for _, s := range p.staticParams() {
		sig = append(sig, s.Name+": float")
	}
	sig = append(sig, "*", "interpret: bool = False")
	outs := p.outputParams()
	ret := "jax.Array"
	if len(outs) > 1 {
		ret = "tuple[" + strings.TrimSuffix(strings.Repeat("jax.Array, ", len(outs)), ", ") + "]"
	}
	def := fmt.Sprintf("def %s_jax(%s) -> %s:", p.entry, strings.Join(sig, ", "), ret)
	if len(def) > 100 {
		def = fmt.Sprintf("def %s_jax(\n    %s\n) -> %s:", p.entry, strings.Join(sig, ", "), ret)
	}
	w("%s", def)
	w("%s", docLine("    ", p.wk.Kernel.Name+" in JAX (interpret=True: Pallas interpret mode, e.g. on CPU)."))
	sizes, err := p.sizeLines()
	if err != nil {
		return "", err
	}
	var items []string
	for _, sp := range p.wk.Spec.Params {
		switch {
		case sp.Kind == "pointer" && sp.Role != "output":
			items = append(items, fmt.Sprintf("%q: %s", sp.Name, sp.Name))
		case sp.Role == "size":
			items = append(items, fmt.Sprintf("%q: %s", sp.Name, p.symExpr(sp.Expr)))
		case sp.Role == "scalar" && sp.Value != nil:
			items = append(items, fmt.Sprintf("%q: %s", sp.Name, provenValue(sp, true)))
		case sp.Role == "scalar":
			items = append(items, fmt.Sprintf("%q: float(%s)", sp.Name, sp.Name))
		}
	}
	used := strings.Join(items, ", ")
	for _, sz := range sizes { // a size no argument reads is not computed (pyflakes F841)
		if regexp.MustCompile(`\b` + sz.name + `\b`).MatchString(used) {
			w("%s", sz.line)
		}
	}
	if line := "    args = {" + used + "}"; len(line) <= 100 {
		w("%s", line)
	} else {
		w("    args = {\n        %s,\n    }", strings.Join(items, ",\n        "))
	}
	w("    res = run(args, interpret=interpret)")
	var rs []string
	for _, o := range outs {
		rs = append(rs, fmt.Sprintf("res[%q]", o.Name))
	}
	w("    return %s", strings.Join(rs, ", "))
	return b.String(), nil
}

// sizeLine is the statement computing one size symbol in <kernel>_jax.
type sizeLine struct{ name, line string }

// sizeLines computes each size symbol of the spec from the input tensors'
// shapes (refused when one is no dimension of an input tensor).
func (p *wirePlan) sizeLines() ([]sizeLine, error) {
	var out []sizeLine
	bound := map[string]bool{}
	add := func(s, format string, a ...any) {
		out = append(out, sizeLine{name: "s_" + s, line: fmt.Sprintf(format, a...)})
		bound[s] = true
	}
	for _, s := range p.wk.Spec.Symbols {
		for _, t := range p.tensorParams() {
			for axis, d := range t.Shape {
				if strings.TrimSpace(d) == s && !bound[s] {
					add(s, "    s_%s = %s.shape[%d]", s, t.Name, axis)
				}
			}
		}
		for _, t := range p.tensorParams() { // a row of K halves: (rows, K * cols)
			for axis, d := range t.Shape {
				if m := reScaled.FindStringSubmatch(d); m != nil && m[2] == s && !bound[s] {
					add(s, "    s_%s = %s.shape[%d] // %s", s, t.Name, axis, m[1])
				}
			}
		}
		if !bound[s] {
			return nil, refuse(CodeWireSpec, "size %s of %s is not a dimension of an input tensor", s, p.wk.Kernel.Name)
		}
	}
	return out, nil
}

// header is PALLASIFY_KERNEL: the kernel, the JAX function and its
// parameters, one validated case, the TPU compile gate per chip.
func (p *wirePlan) header() string {
	var b strings.Builder
	w := func(key, val string) { fmt.Fprintf(&b, "    %q: %s,\n", key, val) }
	b.WriteString("PALLASIFY_KERNEL = {\n")
	w("id", strconv.Quote(p.wk.ID))
	w("kernel", strconv.Quote(p.wk.Kernel.Name))
	w("origin", strconv.Quote("triton"))
	w("function", strconv.Quote(p.entry+"_jax"))
	w("tensors", quoteList(names(p.tensorParams())))
	w("static", quoteList(names(p.staticParams())))
	w("outputs", quoteList(names(p.outputParams())))
	w("example", p.example())
	if len(p.wk.TPU) > 0 {
		b.WriteString("    \"tpu\": {\n")
		chips := make([]string, 0, len(p.wk.TPU))
		for c := range p.wk.TPU {
			chips = append(chips, c)
		}
		sort.Strings(chips)
		for _, c := range chips {
			cc := p.wk.TPU[c]
			rec := fmt.Sprintf(`{"compiled": %s`, pyBool(cc.Compiled))
			if cc.Compiled {
				rec += fmt.Sprintf(`, "bytes_accessed": %s, "roofline_s": %s`, pyFloat(cc.BytesAccessed), pyFloat(cc.RooflineS))
			} else if cc.Error != "" {
				rec += `, "error": ` + strconv.Quote(cc.Error)
			}
			fmt.Fprintf(&b, "        %q: %s},\n", c, rec)
		}
		b.WriteString("    },\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// example is the largest validated case in the JAX function's terms (None
// when the validator reported none).
func (p *wirePlan) example() string {
	var best *pallas.ValidatedCase
	bestN := int64(-1)
	for i := range p.wk.Cases {
		n := int64(1)
		for _, v := range p.wk.Cases[i].Sizes {
			n *= max(v, 1)
		}
		if n > bestN {
			best, bestN = &p.wk.Cases[i], n
		}
	}
	if best == nil {
		return "None"
	}
	var items []string
	for _, t := range p.tensorParams() {
		var dims []string
		for _, d := range t.Shape {
			e, err := kernels.ParseExpr(d)
			if err != nil {
				return "None"
			}
			v, err := e.Eval(best.Sizes)
			if err != nil {
				return "None"
			}
			dims = append(dims, strconv.FormatInt(v, 10))
		}
		items = append(items, fmt.Sprintf(`%q: {"shape": [%s], "dtype": %q}`, t.Name, strings.Join(dims, ", "), t.DType))
	}
	for _, s := range p.staticParams() {
		v, ok := best.Scalars[s.Name]
		if !ok {
			return "None"
		}
		items = append(items, fmt.Sprintf("%q: %s", s.Name, pyFloat(v)))
	}
	return "{\n        " + strings.Join(items, ",\n        ") + ",\n    }"
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', 6, 64)
	if s == "NaN" || strings.Contains(s, "Inf") {
		return "None"
	}
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// opsPart is one kernel's part of the ops module: <kernel>_op builds the
// torch op once; <kernel> takes the launch's own arguments and grid, views
// the tensors as the proven spec shapes them (checking every size the
// proof fixed), runs the op and stores its results into the launch's
// output tensors, as the Triton kernel would.
func (p *wirePlan) opsPart() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	imp := "import " + p.modName + " as kernel"
	if p.pkg {
		imp = "from . import " + p.modName + " as kernel"
	}
	w("")
	w("")
	w("@functools.cache")
	w("def %s_op():", p.entry)
	w("%s", docLine("    ", fmt.Sprintf("The torch op %s::%s: Triton kernel %s in Pallas through jax_op, built on first use.", p.ns, p.entry, p.wk.Kernel.Name)))
	w("    jax_op = _jax_op()  # first: without torch_tpu or jax it raises a RuntimeError saying so")
	w("    %s", imp)
	w("")
	w("    return jax_op(%q, kernel.%s_jax)", p.ns+"::"+p.entry, p.entry)
	var params []string
	defaulted := false
	for _, prm := range p.wk.Kernel.Params {
		if prm.Constexpr || prm.Default != "" {
			defaulted = true
		}
		if defaulted {
			params = append(params, prm.Name+"=None")
		} else {
			params = append(params, prm.Name)
		}
	}
	params = append(params, "*", "grid", "**launch_options")
	w("")
	w("")
	def := fmt.Sprintf("def %s(%s):", p.entry, strings.Join(params, ", "))
	if len(def) > 100 {
		def = fmt.Sprintf("def %s(\n    %s,\n):", p.entry, strings.Join(params, ",\n    "))
	}
	w("%s", def)
	w("%s", docLine("    ", p.wk.Kernel.Name+`[grid](...) for tensors on "tpu": the proven Pallas kernel, results stored as the launch would.`))
	syms, _ := p.symbols()
	fixedGrid := p.fixedGrid()
	needMeta := fixedGrid != ""
	for _, s := range p.wk.Spec.Symbols { // sizes from parameters first: the grid may need them
		if strings.Contains(syms[s], "meta") {
			needMeta = true
			continue
		}
		w("    s_%s = %s", s, syms[s])
	}
	if needMeta {
		var kv []string
		for _, prm := range p.wk.Kernel.Params {
			kv = append(kv, fmt.Sprintf("%q: %s", prm.Name, prm.Name))
		}
		if line := "    meta = {" + strings.Join(kv, ", ") + "}"; len(line) <= 100 {
			w("%s", line)
		} else {
			w("    meta = {\n        %s,\n    }", strings.Join(kv, ",\n        "))
		}
		// a constexpr the launch leaves to autotune: the grid sees the proven value
		for _, name := range sortedKeys(p.wk.Call.Constexprs) {
			v := p.wk.Call.Constexprs[name]
			if !contains(p.wk.Kernel.Constexprs(), name) || !p.boundBy(v, syms) {
				continue
			}
			w("    if meta[%q] is None:", name)
			w("        meta[%q] = %s", name, p.constexprExpr(v))
		}
		for _, s := range p.wk.Spec.Symbols {
			if strings.Contains(syms[s], "meta") {
				w("    s_%s = %s", s, syms[s])
			}
		}
	}
	for _, sp := range p.wk.Spec.Params {
		if sp.Role == "size" && syms[strings.TrimSpace(sp.Expr)] != "int("+sp.Name+")" {
			w("    _check(%q, %s, %s)", sp.Name, sp.Name, p.symExpr(sp.Expr))
		}
		if sp.Kind == "scalar" && sp.Role == "scalar" && sp.Value != nil {
			w("    _check_value(%q, %s, %s)", sp.Name, sp.Name, provenValue(sp, false))
		}
	}
	if fixedGrid != "" {
		w("    _check_value(\"grid\", _grid(grid, meta), %s)", fixedGrid)
	}
	for _, name := range sortedKeys(p.wk.Call.Constexprs) {
		if name == p.wk.Block && (p.wk.Mode == ModeFlat || p.wk.Tiled) {
			continue // flat blocks and column tiles only partition the elements: any width gives the same stores
		}
		if contains(p.wk.Free, name) || !contains(p.wk.Kernel.Constexprs(), name) || !strings.Contains(p.wk.Kernel.Body, name) {
			continue // not a constexpr of the kernel, or one its body never reads
		}
		w("    _check_constexpr(%q, %s, %s)", name, name, p.constexprExpr(p.wk.Call.Constexprs[name]))
	}
	var args []string
	for _, t := range p.tensorParams() {
		args = append(args, fmt.Sprintf("_view(%s, %s)", t.Name, p.shapeTuple(t.Shape)))
	}
	for _, s := range p.staticParams() {
		args = append(args, "float("+s.Name+")")
	}
	w("    res = %s_op()(%s)", p.entry, strings.Join(args, ", "))
	w("    res = res if isinstance(res, (tuple, list)) else (res,)")
	for i, o := range p.outputParams() {
		w("    _store(%s, %s, res[%d])", o.Name, p.shapeTuple(o.Shape), i)
	}
	return b.String()
}

// fixedValues reports a spec with values fixed as captured (a launch of a
// kernel the rules refused, as it happened): its scalars, and its grid when
// no size symbol varies, are checked at every launch.
func (p *wirePlan) fixedValues() bool {
	for _, sp := range p.wk.Spec.Params {
		if sp.Kind == "scalar" && sp.Value != nil {
			return true
		}
	}
	return p.fixedGrid() != ""
}

// fixedGrid is the proven grid as a Python tuple when the spec has no size
// symbol and every axis is a number ("" otherwise).
func (p *wirePlan) fixedGrid() string {
	if len(p.wk.Spec.Symbols) > 0 || len(p.wk.Call.Grid) == 0 {
		return ""
	}
	for _, g := range p.wk.Call.Grid {
		if _, err := strconv.ParseInt(strings.TrimSpace(g), 10, 64); err != nil {
			return ""
		}
	}
	return pyTuple(p.wk.Call.Grid)
}

// provenValue is a fixed scalar as Python: as captured (the launch's value,
// checked), or as the proof ran it (asRun: a float rounded to float32, as
// the harness passes it).
func provenValue(sp kernels.Param, asRun bool) string {
	v := *sp.Value
	if sp.DType != "float32" && sp.DType != "float64" {
		return strconv.FormatInt(int64(v), 10)
	}
	if asRun && sp.DType == "float32" {
		v = float64(float32(v))
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Sprintf("float(%q)", strconv.FormatFloat(v, 'g', -1, 64))
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// boundBy reports an expression whose symbols all come from parameters
// (none from the grid).
func (p *wirePlan) boundBy(e string, syms map[string]string) bool {
	for _, w := range reWord.FindAllString(e, -1) {
		if contains(p.wk.Spec.Symbols, w) && strings.Contains(syms[w], "meta") {
			return false
		}
	}
	return true
}

// constexprExpr is a proven constexpr value as the ops module computes it
// from the launch's sizes (next_power_of_2(cols) -> _next_pow2(s_cols)).
func (p *wirePlan) constexprExpr(v string) string {
	return strings.ReplaceAll(p.symExpr(v), "next_power_of_2(", "_next_pow2(")
}

// opsModuleSource is the directory's _pallas_triton_ops module.
func opsModuleSource(dir string, plans []*wirePlan) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	b.WriteString(`"""` + pallas.WrapText(fmt.Sprintf("TorchTPU ops for the proven Pallas kernels replacing the Triton launches in %s.", dir), 97))
	w("")
	w("Generated by pallasify.")
	b.WriteString(pallas.WrapText("Each launch there sends tensors on \"tpu\" here and keeps the Triton launch on every other device. "+
		"Nothing TPU-specific is imported until a tpu tensor arrives: each op is registered with "+
		"torch.tpu.pallas.jax_op on first use, so the package still imports where jax and torch_tpu are missing. "+
		"Where Triton is missing (a TPU host), the wired files bind their triton names to missing_triton's "+
		"stand-ins, so they import and their tpu branch runs. The kernels and their validator verdicts are in:", 88))
	for _, p := range plans {
		w("    %s.py (%s)", p.modName, p.wk.Kernel.Name)
	}
	w(`"""`)
	w("import functools")
	w("")
	w("")
	b.WriteString(pallas.JaxOpHelper)
	w("")
	w("")
	w("def _grid(grid, meta):")
	w(`    """The launch grid as Triton computes it (a callable gets the launch's arguments)."""`)
	w("    g = grid(meta) if callable(grid) else grid")
	w("    return tuple(int(v) for v in g) if isinstance(g, (tuple, list)) else (int(g),)")
	w("")
	w("")
	w("def _check(name, got, want):")
	w(`    """A size the Pallas kernel was proven for (a stride equal to the row length, ...)."""`)
	w("    if int(got) != int(want):")
	w(`        raise RuntimeError(f"{name} = {got}: the Pallas kernel is proven for {name} = {want} only")`)
	w("")
	w("")
	w("def _next_pow2(v):")
	w("    return 1 if v <= 1 else 1 << (int(v) - 1).bit_length()")
	w("")
	w("")
	w("def _check_constexpr(name, got, want):")
	w(`    """A constexpr the Pallas kernel was proven for.`)
	w("")
	w(`    None: the launch leaves it to autotune or the default.`)
	w(`    """`)
	w("    if got is not None and got != want:")
	w(`        raise RuntimeError(f"{name} = {got!r}: the Pallas kernel is proven for {name} = {want!r} only")`)
	w("")
	w("")
	w("def _view(t, shape):")
	w(`    """t's memory from its first element as a dense tensor of shape.`)
	w("")
	w(`    The layout the Triton kernel addresses: t's own when contiguous, else row-major strides.`)
	w(`    """`)
	w("    n = 1")
	w("    for d in shape:")
	w("        n *= d")
	w("    if t.numel() < n:")
	w(`        raise RuntimeError(f"a tensor of {t.numel()} elements where the kernel addresses {n}")`)
	w("    if t.is_contiguous():")
	w("        return t.reshape(-1)[:n].view(shape)")
	w("    strides, s = [], 1")
	w("    for d in reversed(shape):")
	w("        strides.insert(0, s)")
	w("        s *= d")
	w("    return t.as_strided(shape, strides)")
	w("")
	w("")
	for _, p := range plans {
		if p.fixedValues() {
			w("def _check_value(name, got, want):")
			w(`    """A value the Pallas kernel was proven for (captured from a launch of the tests)."""`)
			w("    if got != want:")
			w(`        raise RuntimeError(f"{name} = {got!r}: the Pallas kernel is proven for {name} = {want!r} only")`)
			w("")
			w("")
			break
		}
	}
	b.WriteString(strings.TrimLeft(missingTritonHelper, "\n"))
	w("")
	w("")
	w("def _store(t, shape, value):")
	w(`    """Writes value where the Triton kernel stores it: t's first elements, in t's dtype."""`)
	w("    _view(t, shape).copy_(value.reshape(shape))")
	for _, p := range plans {
		b.WriteString(p.opsPart())
	}
	return b.String()
}

// docLine is a docstring at indent: one line when it fits 100 columns, else
// wrapped between quote lines.
func docLine(indent, text string) string {
	if one := indent + `"""` + text + `"""`; len(one) <= 100 {
		return one
	}
	body := strings.TrimSuffix(pallas.WrapText(text, 96-len(indent)), "\n")
	return indent + `"""` + strings.ReplaceAll(body, "\n", "\n"+indent) + "\n" + indent + `"""`
}
