package bench

import (
	"context"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// File is one Python file of the tree: its slash path relative to the root
// and its contents.
type File struct {
	Rel string
	Src []byte
}

// MaxCandidates is how many models the script lists at most.
const MaxCandidates = 8

// The models a benchmark tries are read from the tree, without running
// it:
//
//   - model classes: classes deriving from a class whose name ends in Module
//     (nn.Module, torch.nn.Module, LightningModule) or from such a class of
//     the tree, that can be built with no arguments, or whose parameters
//     without a default are annotated with a class (a config, which the
//     script builds from its smallest named config or its defaults);
//   - factories: public module-level functions whose parameters all have
//     defaults and that return a model class of the tree (by annotation, or
//     a return of such a class's call, directly or through a local name),
//     or that a decorator registers (@register_model);
//
// of importable modules (a package's, or a module at the root), outside test
// and documentation directories. They are ranked by where the repository
// points at them, then by size words in their names (tiny, small before
// base, large), then by how many entry scripts name them:
//
//  1. exported by a top package's __init__.py (litgpt's GPT);
//  2. called, or named by a string, in an entry script: a file with an
//     `if __name__ == "__main__":` block or a module-level parse_args()
//     call, or a __main__.py (timm's train.py defaults --model to
//     "resnet50");
//  3. factories (dinov2's vit_small);
//  4. model classes no other model class builds in its __init__ (building
//     blocks such as an attention layer are left out).
//
// Names starting with "test" or "_" are left out (test models are too small
// to measure), and so are classes of the tree a model of the same name
// derives from: the base comes first (litgpt.model.GPT before the adapter's
// GPT).

// skipDirs are directories whose files define no benchmark candidate.
var skipDirs = map[string]bool{"tests": true, "test": true, "testing": true, "docs": true, "doc": true,
	"build": true, "dist": true, "site-packages": true, "node_modules": true, "third_party": true}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// def is one class or function definition of a module.
type def struct {
	module string // dotted import name
	root   string // the directory it is imported from
	file   string
	name   string
	class  bool
	pos    int // order in the walk
	// class: base names (last dotted part) and the __init__'s parameters
	bases    []string
	initSeen bool
	required []param // parameters without a default (self excluded)
	// builds are the names this class's __init__ calls (building blocks)
	builds []string
	// forwardArgs is how many parameters without a default forward takes
	// (-1: no forward in the class)
	forwardArgs int
	// function: all parameters defaulted, return annotation's last name,
	// the names of classes its returns call, a registering decorator
	defaulted  bool
	returns    []string
	registered bool
}

type param struct {
	name, annotation string // annotation's last dotted name ("" when none)
}

// scanState gathers what the files say.
type scanState struct {
	defs     []*def
	exports  map[string]bool     // "module:name" and bare names a top package exports
	entryRef map[string][]string // name -> entry scripts naming it
}

// Scan returns the models a benchmark may try, best first (at most
// MaxCandidates), and the directories the tree's modules import from
// (the root and, for a src layout, src).
func Scan(ctx context.Context, files []File) ([]Candidate, []string) {
	pkgs := map[string]bool{}
	for _, f := range files {
		if path.Base(f.Rel) == "__init__.py" {
			pkgs[path.Dir(f.Rel)] = true
		}
	}
	st := &scanState{exports: map[string]bool{}, entryRef: map[string][]string{}}
	parser := ts.NewParser(ts.Python)
	defer parser.Close()
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		if !strings.HasSuffix(f.Rel, ".py") {
			continue
		}
		tree, err := parser.Parse(ctx, f.Src)
		if err != nil {
			continue
		}
		module, root := moduleOf(f.Rel, pkgs)
		entry, parsesArgs := entryScript(f.Rel, tree.Root(), f.Src)
		if entry {
			st.collectEntry(f.Rel, tree.Root(), f.Src)
		}
		if module != "" && !skipped(f.Rel) {
			if path.Base(f.Rel) == "__init__.py" && !strings.Contains(module, ".") {
				st.collectExports(module, tree.Root(), f.Src)
			}
			if !parsesArgs {
				st.collectDefs(module, root, f.Rel, tree.Root(), f.Src)
			}
		}
		tree.Close()
	}
	defs := st.rank()
	cands := make([]Candidate, len(defs))
	roots := []string{"."}
	for i, r := range defs {
		cands[i] = Candidate{Ref: r.d.module + ":" + r.d.name, Why: st.why(r.d, r.tier)}
		if !slices.Contains(roots, r.d.root) {
			roots = append(roots, r.d.root)
		}
	}
	return cands, roots
}

func skipped(rel string) bool {
	base := path.Base(rel)
	if strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py" ||
		base == "setup.py" || strings.HasPrefix(base, ".") || base == FileName {
		return true
	}
	for _, d := range strings.Split(path.Dir(rel), "/") {
		if skipDirs[d] || strings.HasPrefix(d, ".") && d != "." {
			return true
		}
	}
	return false
}

// moduleOf is the dotted name rel is imported by and the directory it is
// imported from: a file of a package directory climbs to its top package;
// a file at the root is a top-level module. Other files are not importable
// by a name ("" ).
func moduleOf(rel string, pkgs map[string]bool) (string, string) {
	mod := strings.TrimSuffix(rel, ".py")
	if path.Base(mod) == "__init__" {
		mod = path.Dir(mod)
	}
	dir := path.Dir(rel)
	if !pkgs[dir] {
		if dir != "." || !identRE.MatchString(mod) {
			return "", ""
		}
		return mod, "."
	}
	top := dir
	for top != "." && pkgs[path.Dir(top)] {
		top = path.Dir(top)
	}
	root := path.Dir(top)
	rest := mod
	if root != "." {
		rest = strings.TrimPrefix(mod, root+"/")
	}
	parts := strings.Split(rest, "/")
	for _, p := range parts {
		if !identRE.MatchString(p) {
			return "", ""
		}
	}
	return strings.Join(parts, "."), root
}

// entryScript reports whether a file is run as a program: an
// `if __name__ == "__main__":` block or a module-level parse_args() call,
// or a __main__.py; runs is true when importing it runs it (a module-level
// parse_args() call, a __main__.py), so none of its definitions is a
// candidate.
func entryScript(rel string, root *ts.Node, src []byte) (entry, runs bool) {
	if path.Base(rel) == "__main__.py" {
		return true, true
	}
	for i := 0; i < int(root.NamedChildCount()); i++ {
		c := root.NamedChild(i)
		switch c.Type() {
		case "if_statement":
			cond := ts.Text(c.ChildByFieldName("condition"), src)
			if strings.Contains(cond, "__name__") && strings.Contains(cond, "__main__") {
				entry = true
			}
		case "expression_statement":
			if t := ts.Text(c, src); strings.Contains(t, ".parse_args(") || strings.Contains(t, ".parse_known_args(") {
				return true, true
			}
		}
	}
	return entry, false
}

// collectEntry records the names an entry script calls and the
// identifier-like strings it holds (an argparse default naming a model).
func (st *scanState) collectEntry(rel string, root *ts.Node, src []byte) {
	seen := map[string]bool{}
	add := func(name string) {
		if identRE.MatchString(name) && !seen[name] {
			seen[name] = true
			st.entryRef[name] = append(st.entryRef[name], rel)
		}
	}
	ts.Walk(root, func(n *ts.Node) bool {
		switch n.Type() {
		case "call":
			add(lastName(ts.Text(n.ChildByFieldName("function"), src)))
		case "string":
			for i := 0; i < int(n.NamedChildCount()); i++ {
				if c := n.NamedChild(i); c.Type() == "string_content" && n.NamedChildCount() == 3 {
					add(ts.Text(c, src))
				}
			}
		}
		return true
	})
}

// collectExports records what a top package's __init__.py imports (and so
// exports): "module:name" for a resolved import, the bare name as well.
func (st *scanState) collectExports(pkg string, root *ts.Node, src []byte) {
	for i := 0; i < int(root.NamedChildCount()); i++ {
		c := root.NamedChild(i)
		if c.Type() != "import_from_statement" {
			continue
		}
		from := ts.Text(c.ChildByFieldName("module_name"), src)
		switch {
		case strings.HasPrefix(from, ".."):
			from = ""
		case strings.HasPrefix(from, "."):
			from = strings.TrimSuffix(pkg+"."+strings.TrimPrefix(from, "."), ".")
		}
		for j := 0; j < int(c.ChildCount()); j++ {
			n := c.Child(j)
			if c.FieldNameForChild(j) != "name" {
				continue
			}
			name := ts.Text(n, src)
			if n.Type() == "aliased_import" {
				name = ts.Text(n.ChildByFieldName("name"), src)
			}
			st.exports[name] = true
			if from != "" {
				st.exports[from+":"+name] = true
			}
		}
	}
}

// collectDefs records a module's top-level classes and functions.
func (st *scanState) collectDefs(module, importRoot, rel string, root *ts.Node, src []byte) {
	for i := 0; i < int(root.NamedChildCount()); i++ {
		c := root.NamedChild(i)
		var decorators []string
		if c.Type() == "decorated_definition" {
			for j := 0; j < int(c.NamedChildCount()); j++ {
				if d := c.NamedChild(j); d.Type() == "decorator" {
					decorators = append(decorators, ts.Text(d, src))
				}
			}
			c = c.ChildByFieldName("definition")
			if c == nil {
				continue
			}
		}
		name := ts.Text(c.ChildByFieldName("name"), src)
		if strings.HasPrefix(name, "_") || strings.HasPrefix(strings.ToLower(name), "test") {
			continue
		}
		d := &def{module: module, root: importRoot, file: rel, name: name, pos: len(st.defs), forwardArgs: -1}
		switch c.Type() {
		case "class_definition":
			d.class = true
			if sc := c.ChildByFieldName("superclasses"); sc != nil {
				for j := 0; j < int(sc.NamedChildCount()); j++ {
					if b := sc.NamedChild(j); b.Type() == "identifier" || b.Type() == "attribute" {
						d.bases = append(d.bases, lastName(ts.Text(b, src)))
					}
				}
			}
			classBody(d, c.ChildByFieldName("body"), src)
		case "function_definition":
			d.defaulted = allDefaulted(c.ChildByFieldName("parameters"), src)
			if rt := c.ChildByFieldName("return_type"); rt != nil {
				d.returns = append(d.returns, lastName(ts.Text(rt, src)))
			}
			d.returns = append(d.returns, returnedCalls(c.ChildByFieldName("body"), src)...)
			for _, dec := range decorators {
				d.registered = d.registered || strings.Contains(strings.ToLower(dec), "register")
			}
		default:
			continue
		}
		st.defs = append(st.defs, d)
	}
}

// classBody reads a class's __init__ parameters and the names its methods
// call.
func classBody(d *def, body *ts.Node, src []byte) {
	if body == nil {
		return
	}
	for i := 0; i < int(body.NamedChildCount()); i++ {
		c := body.NamedChild(i)
		if c.Type() == "decorated_definition" {
			c = c.ChildByFieldName("definition")
		}
		if c == nil || c.Type() != "function_definition" {
			continue
		}
		switch ts.Text(c.ChildByFieldName("name"), src) {
		case "forward", "__call__":
			d.forwardArgs = len(requiredParams(c.ChildByFieldName("parameters"), src))
		case "__init__":
			d.initSeen = true
			d.required = requiredParams(c.ChildByFieldName("parameters"), src)
			ts.Walk(c.ChildByFieldName("body"), func(n *ts.Node) bool {
				if n.Type() == "call" {
					d.builds = append(d.builds, lastName(ts.Text(n.ChildByFieldName("function"), src)))
				}
				return true
			})
		}
	}
}

// requiredParams are the parameters without a default, self excluded.
func requiredParams(params *ts.Node, src []byte) []param {
	var out []param
	if params == nil {
		return nil
	}
	for i := 0; i < int(params.NamedChildCount()); i++ {
		p := params.NamedChild(i)
		switch p.Type() {
		case "identifier":
			out = append(out, param{name: ts.Text(p, src)})
		case "typed_parameter":
			name := ""
			if id := p.NamedChild(0); id != nil && id.Type() == "identifier" {
				name = ts.Text(id, src)
			}
			if name != "" {
				out = append(out, param{name: name, annotation: lastName(ts.Text(p.ChildByFieldName("type"), src))})
			}
		}
	}
	if len(out) > 0 && (out[0].name == "self" || out[0].name == "cls") {
		out = out[1:]
	}
	return out
}

// allDefaulted reports whether a function can be called with no argument.
func allDefaulted(params *ts.Node, src []byte) bool {
	return len(requiredParams(params, src)) == 0
}

// returnedCalls are the names of the calls a function returns, directly
// (`return Net(...)`) or through a local name (`model = Net(...)`, then
// `return model`).
func returnedCalls(body *ts.Node, src []byte) []string {
	if body == nil {
		return nil
	}
	assigned := map[string][]string{}
	var returned []*ts.Node
	ts.Walk(body, func(n *ts.Node) bool {
		switch n.Type() {
		case "function_definition", "class_definition", "lambda":
			return false
		case "assignment":
			l, r := n.ChildByFieldName("left"), n.ChildByFieldName("right")
			if l != nil && r != nil && l.Type() == "identifier" && r.Type() == "call" {
				name := ts.Text(l, src)
				assigned[name] = append(assigned[name], lastName(ts.Text(r.ChildByFieldName("function"), src)))
			}
		case "return_statement":
			if n.NamedChildCount() > 0 {
				returned = append(returned, n.NamedChild(0))
			}
		}
		return true
	})
	var out []string
	for _, r := range returned {
		switch r.Type() {
		case "call":
			out = append(out, lastName(ts.Text(r.ChildByFieldName("function"), src)))
		case "identifier":
			out = append(out, assigned[ts.Text(r, src)]...)
		}
	}
	return out
}

// lastName is the last dotted part of an expression's text ("nn.Module"
// -> "Module"), "" when it is no plain name.
func lastName(s string) string {
	s = strings.TrimSpace(strings.Trim(s, `"'`))
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	if !identRE.MatchString(s) {
		return ""
	}
	return s
}

// rank keeps the definitions a benchmark can build and orders them (see
// the comment at the top of this file).
func (st *scanState) rank() []ranked {
	byName := map[string][]*def{}
	for _, d := range st.defs {
		byName[d.name] = append(byName[d.name], d)
	}
	// Model classes: a base ending in Module, or a model class of the tree.
	model := map[*def]bool{}
	for changed := true; changed; {
		changed = false
		for _, d := range st.defs {
			if !d.class || model[d] {
				continue
			}
			for _, b := range d.bases {
				isModel := strings.HasSuffix(b, "Module") && !strings.HasSuffix(b, "DataModule")
				for _, o := range byName[b] {
					isModel = isModel || (o != d && model[o])
				}
				if isModel {
					model[d], changed = true, true
					break
				}
			}
		}
	}
	modelName := map[string]bool{}
	for d := range model {
		modelName[d.name] = true
	}
	built := map[string]bool{} // classes another model class builds
	for d := range model {
		for _, b := range d.builds {
			if b != d.name {
				built[b] = true
			}
		}
	}
	var out []ranked
	for _, d := range st.defs {
		ref := d.module + ":" + d.name
		exported := st.exports[ref] || (st.exports[d.name] && len(byName[d.name]) == 1)
		entry := st.entryRef[d.name]
		tier := 0
		switch {
		case d.class:
			if !model[d] || !st.constructible(d, byName, model) || forwardArgs(d, byName, model) > 1 {
				continue
			}
			switch {
			case exported:
			case len(entry) > 0:
				tier = 1
			case built[d.name]:
				continue
			default:
				tier = 3
			}
		default:
			returnsModel := d.registered
			for _, r := range d.returns {
				returnsModel = returnsModel || modelName[r]
			}
			if !d.defaulted || !returnsModel {
				continue
			}
			switch {
			case exported:
			case len(entry) > 0:
				tier = 1
			default:
				tier = 2
			}
		}
		out = append(out, ranked{d: d, tier: tier, size: sizeRank(d.name), refs: len(entry), depth: depthOf(d, byName, model)})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.tier != b.tier:
			return a.tier < b.tier
		case a.refs != b.refs:
			return a.refs > b.refs
		case a.size != b.size:
			return a.size < b.size
		case a.depth != b.depth:
			return a.depth < b.depth
		}
		return a.d.pos < b.d.pos
	})
	if len(out) > MaxCandidates {
		out = out[:MaxCandidates]
	}
	return out
}

// ranked is a candidate definition with its rank's keys.
type ranked struct {
	d                       *def
	tier, size, refs, depth int
}

// constructible reports whether a model class can be built by the script:
// every __init__ parameter without a default is annotated with a class
// name (a config); a class without __init__ takes its tree base's.
func (st *scanState) constructible(d *def, byName map[string][]*def, model map[*def]bool) bool {
	seen := map[*def]bool{}
	for !d.initSeen {
		seen[d] = true
		var next *def
		for _, b := range d.bases {
			for _, o := range byName[b] {
				if model[o] && !seen[o] {
					next = o
				}
			}
		}
		if next == nil {
			return true // nn.Module's own __init__
		}
		d = next
	}
	for _, p := range d.required {
		if p.annotation == "" || !isClassName(p.annotation) {
			return false
		}
	}
	return true
}

func isClassName(s string) bool {
	switch s {
	case "", "int", "float", "str", "bool", "list", "dict", "tuple", "Any", "Optional", "Union", "Tensor", "Module":
		return false
	}
	return s[0] >= 'A' && s[0] <= 'Z'
}

// forwardArgs is how many inputs without a default d's forward takes (its
// own, else its nearest tree base's; 0 when none is in the tree): a loss
// takes two (input and target) and is no model to benchmark.
func forwardArgs(d *def, byName map[string][]*def, model map[*def]bool) int {
	seen := map[*def]bool{}
	for d != nil && !seen[d] {
		if d.forwardArgs >= 0 {
			return d.forwardArgs
		}
		seen[d] = true
		var next *def
		for _, b := range d.bases {
			for _, o := range byName[b] {
				if model[o] && !seen[o] {
					next = o
				}
			}
		}
		d = next
	}
	return 0
}

// depthOf is how many model classes of the tree d derives from.
func depthOf(d *def, byName map[string][]*def, model map[*def]bool) int {
	depth := 0
	seen := map[*def]bool{d: true}
	for cur := d; cur != nil && depth < 16; {
		var next *def
		for _, b := range cur.bases {
			for _, o := range byName[b] {
				if model[o] && !seen[o] {
					next = o
				}
			}
		}
		if next == nil {
			break
		}
		seen[next] = true
		depth++
		cur = next
	}
	return depth
}

// sizeWords rank a name's size: the smaller first, a name without one in
// the middle.
var sizeWords = map[string]int{
	"nano": 0, "pico": 0, "femto": 0, "micro": 0, "tiny": 0, "mini": 0, "small": 0, "xs": 0, "xxs": 0,
	"medium": 2, "base": 2, "large": 3, "huge": 3, "giant": 3, "xl": 3, "xxl": 3, "big": 3,
}

var wordRE = regexp.MustCompile(`[a-z]+`)

func sizeRank(name string) int {
	rank := 1
	for _, w := range wordRE.FindAllString(strings.ToLower(name), -1) {
		if r, ok := sizeWords[w]; ok {
			return r
		}
	}
	return rank
}

// why says in a few words where a candidate was found.
func (st *scanState) why(d *def, tier int) string {
	switch tier {
	case 0:
		return "exported by " + strings.SplitN(d.module, ".", 2)[0]
	case 1:
		files := st.entryRef[d.name]
		s := "named in " + files[0]
		if len(files) > 1 {
			s += " and " + strconv.Itoa(len(files)-1) + " more"
		}
		return s
	case 2:
		return "a factory"
	}
	return "a model class"
}
