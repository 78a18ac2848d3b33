// Package triton finds Triton kernels and everything around them that a
// translation needs: the @triton.jit functions (under @triton.autotune and
// @triton.heuristics too), their kernel[grid](...) launches, the Python
// wrapper around each launch (the outputs it allocates, its grid, the
// constexpr sizes it computes) and the torch.autograd.Function classes whose
// forward and backward reach those wrappers. Files are parsed with
// tree-sitter Python (transforms/ts).
//
// Translate (translate.go, render.go) drafts Pallas for the common shapes by
// rules: row kernels (one program per row: row * stride + arange columns
// masked by the column count, tl.sum/max/min over the Triton block's lanes,
// per-row statistics at ptr + row, vectors shared by the rows, column tiles on
// a second program-id axis, chunked row loops, constexpr ifs, @triton.jit
// helpers inlined) and flat 1-D blocks (pid * BLOCK + arange masked by the
// element count). Blocks follow TPU rules (whole padded rows, 128 lanes, rows
// in multiples of 8), not the GPU BLOCK_SIZE. Spec (spec.go) infers the
// kernel-level KernelSpec from the same analysis and the kernel-mode Call
// that runs the original, isolated from its file (Isolate), under Triton's
// interpreter. Anything else is refused with a PTR code (refuse.go).
package triton

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Param is one parameter of a @triton.jit function.
type Param struct {
	Name      string `json:"name"`
	Constexpr bool   `json:"constexpr,omitempty"`
	Default   string `json:"default,omitempty"`
}

// Kernel is one @triton.jit function.
type Kernel struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Line int    `json:"line"`
	// Decorators are the Triton decorators, outermost first: "jit",
	// "autotune", "heuristics".
	Decorators []string `json:"decorators"`
	Params     []Param  `json:"params"`
	// Source is the function's text (decorators excluded); Body its body.
	Source string `json:"-"`
	Body   string `json:"-"`
	// Bindings are the other names bound to its jit object at module level
	// (scale_kernel = triton.jit(_scale), fast = triton.autotune(...)(kern)).
	Bindings []string `json:"bindings,omitempty"`
	// Launches are the kernel[grid](...) sites that launch it.
	Launches []*Launch `json:"launches,omitempty"`

	def *ts.Node
	src []byte
}

// Constexprs are the names of the constexpr parameters.
func (k *Kernel) Constexprs() []string {
	var out []string
	for _, p := range k.Params {
		if p.Constexpr {
			out = append(out, p.Name)
		}
	}
	return out
}

// Autotuned reports a kernel whose constexpr values come from
// @triton.autotune configs rather than from its launches.
func (k *Kernel) Autotuned() bool { return slices.Contains(k.Decorators, "autotune") }

// Arg is one argument at a launch: positional (Name "") or keyword.
type Arg struct {
	Name string `json:"name,omitempty"`
	Expr string `json:"expr"`
}

// Alloc is an output the wrapper allocates: name = torch.empty...(...).
type Alloc struct {
	Name string `json:"name"`
	Expr string `json:"expr"`
	Line int    `json:"line"`
}

// Launch is one kernel[grid](...) call.
type Launch struct {
	Kernel string `json:"kernel"`
	Path   string `json:"path"`
	Line   int    `json:"line"`
	// Grid is the subscript's source; GridDef the wrapper's assignment to it
	// when Grid is a name (grid = lambda meta: ...).
	Grid    string `json:"grid"`
	GridDef string `json:"grid_def,omitempty"`
	Args    []Arg  `json:"args"`
	// Via is the launch's callee when it is not the kernel's own name: a
	// local alias (fx = kernels[dtype]), an attribute (self._kernel), a
	// binding or an inline triton.jit(fn).
	Via string `json:"via,omitempty"`
	// Alternatives are the other kernels the callee may hold at this launch
	// (fx = {torch.float16: k16, torch.float32: k32}[x.dtype]): the launch is
	// listed under each of them.
	Alternatives []string `json:"alternatives,omitempty"`
	// Wrapper is the function the launch sits in ("" at module level),
	// with its parameters and line.
	Wrapper       string   `json:"wrapper,omitempty"`
	WrapperLine   int      `json:"wrapper_line,omitempty"`
	WrapperParams []string `json:"wrapper_params,omitempty"`
	// Class is the class the wrapper is a method of, if any.
	Class string `json:"class,omitempty"`
	// Allocs are the tensors the wrapper allocates before the launch.
	Allocs []Alloc `json:"allocs,omitempty"`
	// Sizes maps each name the launch passes for a constexpr to the
	// wrapper's assignment of it (BLOCK_SIZE -> triton.next_power_of_2(n)).
	Sizes map[string]string `json:"sizes,omitempty"`
	// Returns is the wrapper's return expression.
	Returns string `json:"returns,omitempty"`
	// Literals are the literal values the wrapper assigns to each name
	// (in source order) or gives it as a parameter default: a constexpr
	// passed by name takes the first.
	Literals map[string][]string `json:"literals,omitempty"`

	targets []string // the names the callee may hold (bind.go), linked to kernels
}

// Autograd is a torch.autograd.Function subclass and what its forward and
// backward call (wrapper functions or kernels of the inventory).
type Autograd struct {
	Class    string   `json:"class"`
	Path     string   `json:"path"`
	Line     int      `json:"line"`
	Forward  []string `json:"forward,omitempty"`
	Backward []string `json:"backward,omitempty"`
}

// Inventory is every Triton kernel, launch and autograd.Function of a tree.
type Inventory struct {
	Kernels  []*Kernel   `json:"kernels"`
	Autograd []*Autograd `json:"autograd,omitempty"`
	// Unlaunched counts kernels with no launch found.
	Unlaunched int `json:"unlaunched"`
	// Files maps each file holding a kernel, launch or autograd.Function
	// to its source (the reference bundles them).
	Files map[string][]byte `json:"-"`

	imports map[string]map[string]importRef // by file: local name -> (module, original name)
}

// Kernel returns the kernel named name in path ("" matches any path).
func (inv *Inventory) Kernel(path, name string) *Kernel {
	for _, k := range inv.Kernels {
		if k.Name == name && (path == "" || k.Path == path) {
			return k
		}
	}
	return nil
}

// Discover walks root for Python files that mention triton.
func Discover(ctx context.Context, root string) (*Inventory, error) {
	var rels []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "site-packages", ".venv", "venv", "__pycache__", "build", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".py") && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			rels = append(rels, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(rels)
	files := map[string][]byte{}
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil || len(data) > 4<<20 {
			continue
		}
		files[rel] = data
	}
	return DiscoverFiles(ctx, files)
}

// DiscoverFiles is Discover over files already read (path -> source).
func DiscoverFiles(ctx context.Context, files map[string][]byte) (*Inventory, error) {
	p := ts.NewParser(ts.Python)
	defer p.Close()
	inv := &Inventory{Files: map[string][]byte{}, imports: map[string]map[string]importRef{}}
	var parsed []*pyFile
	paths := make([]string, 0, len(files))
	for rel := range files {
		paths = append(paths, rel)
	}
	sort.Strings(paths)
	for _, rel := range paths {
		src := files[rel]
		if !strings.Contains(string(src), "triton") && !strings.Contains(string(src), "autograd") &&
			!strings.Contains(string(src), "Function") {
			continue
		}
		tree, err := p.Parse(ctx, src)
		if err != nil {
			return nil, err
		}
		pf := scanFile(rel, src, tree.Root())
		tree.Close()
		if len(pf.kernels)+len(pf.launches)+len(pf.autograd) > 0 {
			parsed = append(parsed, pf)
			inv.Files[rel] = src
		}
		inv.imports[rel] = pf.imports
		inv.Kernels = append(inv.Kernels, pf.kernels...)
		inv.Autograd = append(inv.Autograd, pf.autograd...)
	}
	link(inv, parsed)
	return inv, nil
}

// link attaches launches to kernels. Each name a launch's callee may hold
// (Launch.targets) is the kernel of that name or binding in the launching
// file, else the only kernel of that name or binding (or the one the file
// imports that name from). A callee that may hold several kernels lists the
// launch under each, with the others as its Alternatives.
func link(inv *Inventory, files []*pyFile) {
	byName := map[string][]*Kernel{}
	for _, k := range inv.Kernels {
		byName[k.Name] = append(byName[k.Name], k)
		for _, b := range k.Bindings {
			if b != k.Name {
				byName[b] = append(byName[b], k)
			}
		}
	}
	resolve := func(pf *pyFile, local string) *Kernel {
		name := local
		orig, imported := pf.imports[local]
		if imported {
			name = orig.name
		}
		cands := byName[name]
		for _, k := range cands {
			if k.Path == pf.rel && !imported {
				return k
			}
		}
		if len(cands) == 1 {
			return cands[0]
		}
		if imported {
			for _, k := range cands {
				if moduleOf(k.Path) == orig.module || strings.HasSuffix(moduleOf(k.Path), "."+orig.module) {
					return k
				}
			}
		}
		for _, k := range cands {
			if k.Path == pf.rel {
				return k
			}
		}
		return nil
	}
	for _, pf := range files {
		for _, l := range pf.launches {
			var picks []*Kernel
			for _, t := range l.targets {
				if k := resolve(pf, t); k != nil && !slices.Contains(picks, k) {
					picks = append(picks, k)
				}
			}
			callee := l.Kernel
			for i, k := range picks {
				kl := l
				if i > 0 {
					c := *l
					kl = &c
				}
				if callee != k.Name {
					kl.Via = callee
				}
				kl.Kernel, kl.Alternatives = k.Name, nil
				for _, o := range picks {
					if o != k {
						kl.Alternatives = append(kl.Alternatives, o.Name)
					}
				}
				k.Launches = append(k.Launches, kl)
			}
		}
	}
	for _, k := range inv.Kernels {
		if len(k.Launches) == 0 {
			inv.Unlaunched++
		}
	}
}

// moduleOf turns a path into a dotted module ("src/pkg/ops.py" -> "src.pkg.ops").
func moduleOf(rel string) string {
	rel = strings.TrimSuffix(rel, ".py")
	rel = strings.TrimSuffix(rel, "/__init__")
	return strings.ReplaceAll(rel, "/", ".")
}

type importRef struct{ module, name string }

type pyFile struct {
	rel      string
	src      []byte
	kernels  []*Kernel
	launches []*Launch
	autograd []*Autograd
	imports  map[string]importRef // local name -> (module, original name)

	jits    []string             // the callee texts that mean triton.jit here
	defs    map[string]*ts.Node  // plain (not @triton.jit) function definitions, the first of each name
	jitted  map[string][]string  // functions a triton.jit call jits -> the decorators of the first such call
	assigns []assign             // name = ... and self.attr = ... anywhere in the file
	callees map[*Launch]*ts.Node // each launch's callee (resolved before the tree goes)
}

func (pf *pyFile) text(n *ts.Node) string {
	if n == nil {
		return ""
	}
	return ts.Text(n, pf.src)
}

func (pf *pyFile) line(n *ts.Node) int { return int(n.StartPoint().Row) + 1 }

func scanFile(rel string, src []byte, root *ts.Node) *pyFile {
	pf := &pyFile{rel: rel, src: src, imports: map[string]importRef{}, jits: kernels.TritonJitNames(src),
		defs: map[string]*ts.Node{}, jitted: map[string][]string{}, callees: map[*Launch]*ts.Node{}}
	jitDefs := map[string]bool{}
	ts.Walk(root, func(n *ts.Node) bool {
		switch n.Type() {
		case "import_from_statement":
			pf.importFrom(n)
		case "decorated_definition":
			if pf.decorated(n) {
				jitDefs[pf.text(n.ChildByFieldName("definition").ChildByFieldName("name"))] = true
			}
		case "function_definition":
			if name := pf.text(n.ChildByFieldName("name")); pf.defs[name] == nil {
				pf.defs[name] = n
			}
		case "class_definition":
			pf.class(n)
		case "call":
			pf.launch(n)
			if fn, ok := kernels.TritonJitCall(n, src, pf.jits); ok {
				if _, seen := pf.jitted[fn]; !seen {
					pf.jitted[fn] = pf.wrappers(n)
				}
			}
		case "assignment":
			pf.assignment(n)
		}
		return true
	})
	// functions jitted by a call: kernels like the decorated ones
	for _, name := range sortedKeys(pf.jitted) {
		def := pf.defs[name]
		if def == nil || jitDefs[name] {
			continue
		}
		pf.kernels = append(pf.kernels, pf.kernel(def, pf.jitted[name]))
	}
	sort.SliceStable(pf.kernels, func(i, j int) bool { return pf.kernels[i].Line < pf.kernels[j].Line })
	pf.bindKernels()
	for _, l := range pf.launches {
		l.targets = pf.targets(pf.callees[l], 0)
	}
	return pf
}

func (pf *pyFile) importFrom(n *ts.Node) {
	mod := pf.text(n.ChildByFieldName("module_name"))
	for _, c := range ts.Children(n) {
		if c == n.ChildByFieldName("module_name") {
			continue
		}
		switch c.Type() {
		case "dotted_name":
			nm := pf.text(c)
			pf.imports[nm] = importRef{strings.TrimLeft(mod, "."), nm}
		case "aliased_import":
			nm := pf.text(c.ChildByFieldName("name"))
			pf.imports[pf.text(c.ChildByFieldName("alias"))] = importRef{strings.TrimLeft(mod, "."), nm}
		}
	}
}

// tritonDecorator names a Triton decorator ("jit", "autotune",
// "heuristics") or "".
func tritonDecorator(text string) string {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "@"))
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = t[:i]
	}
	switch strings.TrimSpace(t) {
	case "triton.jit", "jit":
		return "jit"
	case "triton.autotune", "autotune":
		return "autotune"
	case "triton.heuristics", "heuristics":
		return "heuristics"
	}
	return ""
}

func (pf *pyFile) decorated(n *ts.Node) bool {
	var decos []string
	jit := false
	for _, c := range ts.Children(n) {
		if c.Type() != "decorator" {
			continue
		}
		if d := tritonDecorator(pf.text(c)); d != "" {
			decos = append(decos, d)
			jit = jit || d == "jit"
		}
	}
	def := n.ChildByFieldName("definition")
	if !jit || def == nil || def.Type() != "function_definition" {
		return false
	}
	pf.kernels = append(pf.kernels, pf.kernel(def, decos))
	return true
}

// kernel makes the Kernel of a jitted function definition.
func (pf *pyFile) kernel(def *ts.Node, decos []string) *Kernel {
	k := &Kernel{Name: pf.text(def.ChildByFieldName("name")), Path: pf.rel, Line: pf.line(def), Decorators: decos,
		Source: pf.text(def), Body: pf.text(def.ChildByFieldName("body")), def: def, src: pf.src}
	for _, p := range ts.Children(def.ChildByFieldName("parameters")) {
		if prm, ok := pf.param(p); ok {
			k.Params = append(k.Params, prm)
		}
	}
	return k
}

func (pf *pyFile) param(p *ts.Node) (Param, bool) {
	switch p.Type() {
	case "identifier":
		return Param{Name: pf.text(p)}, true
	case "typed_parameter":
		var name string
		for _, c := range ts.Children(p) {
			if c.Type() == "identifier" {
				name = pf.text(c)
				break
			}
		}
		return Param{Name: name, Constexpr: strings.Contains(pf.text(p.ChildByFieldName("type")), "constexpr")}, name != ""
	case "default_parameter", "typed_default_parameter":
		return Param{Name: pf.text(p.ChildByFieldName("name")), Default: pf.text(p.ChildByFieldName("value")),
			Constexpr: strings.Contains(pf.text(p.ChildByFieldName("type")), "constexpr")}, true
	}
	return Param{}, false
}

// launch records name[grid](...) and name[grid].run(...)-free forms: the
// callee is a subscript of an identifier (or attribute) with one index.
func (pf *pyFile) launch(n *ts.Node) {
	fn := n.ChildByFieldName("function")
	if fn == nil || fn.Type() != "subscript" {
		return
	}
	val := fn.ChildByFieldName("value")
	if val == nil {
		return
	}
	name := pf.text(val)
	switch val.Type() {
	case "identifier":
	case "attribute":
		name = pf.text(val.ChildByFieldName("attribute"))
	case "call", "subscript", "parenthesized_expression":
		// triton.jit(fn)[grid], wrap_triton(k)[grid], kernels[dtype][grid]
		name = strings.Join(strings.Fields(name), " ")
	default:
		return
	}
	l := &Launch{Kernel: name, Path: pf.rel, Line: pf.line(n), Grid: pf.text(fn.ChildByFieldName("subscript"))}
	pf.callees[l] = val
	for _, a := range ts.Children(n.ChildByFieldName("arguments")) {
		switch a.Type() {
		case "(", ")", ",", "comment":
		case "keyword_argument":
			l.Args = append(l.Args, Arg{Name: pf.text(a.ChildByFieldName("name")), Expr: pf.text(a.ChildByFieldName("value"))})
		default:
			l.Args = append(l.Args, Arg{Expr: pf.text(a)})
		}
	}
	if w := ts.Ancestor(n, "function_definition"); w != nil {
		pf.wrapper(l, w, n)
	}
	pf.launches = append(pf.launches, l)
}

var allocCalls = []string{"torch.empty", "torch.empty_like", "torch.zeros", "torch.zeros_like", "torch.ones",
	"torch.ones_like", "torch.full", "torch.full_like", ".new_empty", ".new_zeros", ".new_ones", ".new_full",
	".empty_like", ".clone"}

func isAlloc(callee string) bool {
	for _, a := range allocCalls {
		if callee == a || (strings.HasPrefix(a, ".") && strings.HasSuffix(callee, a)) {
			return true
		}
	}
	return false
}

// wrapper fills the launch's wrapper facts from its enclosing function.
func (pf *pyFile) wrapper(l *Launch, w *ts.Node, call *ts.Node) {
	l.Wrapper = pf.text(w.ChildByFieldName("name"))
	l.WrapperLine = pf.line(w)
	l.Literals = map[string][]string{}
	for _, p := range ts.Children(w.ChildByFieldName("parameters")) {
		if prm, ok := pf.param(p); ok {
			l.WrapperParams = append(l.WrapperParams, prm.Name)
			if prm.Default != "" && isLiteral(prm.Default) {
				l.Literals[prm.Name] = append(l.Literals[prm.Name], prm.Default)
			}
		}
	}
	if c := ts.Ancestor(w, "class_definition"); c != nil {
		l.Class = pf.text(c.ChildByFieldName("name"))
	}
	assigns := map[string]string{}
	ts.Walk(w.ChildByFieldName("body"), func(x *ts.Node) bool {
		if x.Type() == "function_definition" || x.Type() == "lambda" {
			return x == w
		}
		switch x.Type() {
		case "assignment":
			left, right := x.ChildByFieldName("left"), x.ChildByFieldName("right")
			if left == nil || right == nil || x.StartByte() > call.StartByte() {
				return true
			}
			for _, name := range targetNames(pf, left) {
				assigns[name] = pf.text(right)
			}
			if left.Type() == "identifier" && isLiteral(pf.text(right)) {
				l.Literals[pf.text(left)] = append(l.Literals[pf.text(left)], pf.text(right))
			}
			if left.Type() == "identifier" && right.Type() == "call" && isAlloc(pf.text(right.ChildByFieldName("function"))) {
				l.Allocs = append(l.Allocs, Alloc{Name: pf.text(left), Expr: pf.text(right), Line: pf.line(x)})
			}
		case "return_statement":
			if l.Returns == "" || x.StartByte() > call.StartByte() {
				for _, c := range ts.Children(x) {
					if c.Type() != "return" {
						l.Returns = pf.text(c)
					}
				}
			}
		}
		return true
	})
	if d, ok := assigns[l.Grid]; ok {
		l.GridDef = d
	}
	for _, a := range l.Args {
		if d, ok := assigns[a.Expr]; ok {
			if l.Sizes == nil {
				l.Sizes = map[string]string{}
			}
			l.Sizes[a.Expr] = d
		}
	}
}

// targetNames lists the identifiers an assignment binds (a, b = ... too).
func targetNames(pf *pyFile, left *ts.Node) []string {
	switch left.Type() {
	case "identifier":
		return []string{pf.text(left)}
	case "pattern_list", "tuple_pattern", "tuple", "expression_list":
		var out []string
		for _, c := range ts.Children(left) {
			if c.Type() == "identifier" {
				out = append(out, pf.text(c))
			}
		}
		return out
	}
	return nil
}

// class records a torch.autograd.Function subclass and the names its
// forward and backward call.
func (pf *pyFile) class(n *ts.Node) {
	supers := pf.text(n.ChildByFieldName("superclasses"))
	if !strings.Contains(supers, "autograd.Function") && !strings.Contains(supers, "(Function") {
		return
	}
	a := &Autograd{Class: pf.text(n.ChildByFieldName("name")), Path: pf.rel, Line: pf.line(n)}
	ts.Walk(n.ChildByFieldName("body"), func(x *ts.Node) bool {
		if x.Type() != "function_definition" {
			return true
		}
		method := pf.text(x.ChildByFieldName("name"))
		if method != "forward" && method != "backward" {
			return false
		}
		seen := map[string]bool{}
		ts.Walk(x.ChildByFieldName("body"), func(c *ts.Node) bool {
			if c.Type() != "call" {
				return true
			}
			f := c.ChildByFieldName("function")
			name := ""
			switch {
			case f == nil:
			case f.Type() == "identifier":
				name = pf.text(f)
			case f.Type() == "subscript":
				name = pf.text(f.ChildByFieldName("value"))
			}
			if name != "" && !seen[name] && !builtinCall(name) {
				seen[name] = true
				if method == "forward" {
					a.Forward = append(a.Forward, name)
				} else {
					a.Backward = append(a.Backward, name)
				}
			}
			return true
		})
		return false
	})
	pf.autograd = append(pf.autograd, a)
}

func builtinCall(name string) bool {
	switch name {
	case "len", "range", "min", "max", "int", "float", "tuple", "list", "dict", "isinstance", "getattr", "print",
		"super", "zip", "enumerate", "sum", "abs", "type", "bool", "str":
		return true
	}
	return false
}

// AutogradFor returns the autograd.Function whose forward or backward
// calls the launch's wrapper (or launches the kernel directly), and which
// of the two ("forward", "backward").
func (inv *Inventory) AutogradFor(l *Launch) (*Autograd, string) {
	for _, a := range inv.Autograd {
		if l.Class == a.Class && a.Path == l.Path {
			if l.Wrapper == "backward" {
				return a, "backward"
			}
			return a, "forward"
		}
		if slices.Contains(a.Forward, l.Wrapper) || slices.Contains(a.Forward, l.Kernel) {
			return a, "forward"
		}
		if slices.Contains(a.Backward, l.Wrapper) || slices.Contains(a.Backward, l.Kernel) {
			return a, "backward"
		}
	}
	return nil, ""
}

// CalledFromKernels reports a @triton.jit function another kernel calls (a
// device helper, inlined rather than launched): a kernel of its file, or of
// a file that imports it (from .utils import silu [as act]).
func (inv *Inventory) CalledFromKernels(h *Kernel) bool {
	for _, k := range inv.Kernels {
		if k == h {
			continue
		}
		if k.Path == h.Path && strings.Contains(k.Body, h.Name+"(") {
			return true
		}
		for local, ref := range inv.imports[k.Path] {
			if ref.name == h.Name && (moduleOf(h.Path) == ref.module || strings.HasSuffix(moduleOf(h.Path), "."+ref.module)) &&
				strings.Contains(k.Body, local+"(") {
				return true
			}
		}
	}
	return false
}
