package kernels

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// item kinds.
const (
	itemKernel   = "kernel"   // __global__ function (or template)
	itemDevice   = "device"   // __device__ (maybe __host__ too) function
	itemConstFn  = "constfn"  // constexpr function, usable on the device
	itemHostFn   = "hostfn"   // host-only function
	itemProto    = "proto"    // function declaration without body
	itemMacro    = "macro"    // #define
	itemType     = "type"     // struct/class/union/enum/typedef/using alias
	itemDevVar   = "devvar"   // __constant__/__device__/__managed__ variable
	itemConstVar = "constvar" // const/constexpr variable
	itemHostVar  = "hostvar"  // other variable
	itemInclude  = "include"  // #include
	itemUsing    = "using"    // using-directive / using-declaration
	itemOther    = "other"
)

// item is one top-level declaration of a CUDA source (inside namespaces,
// linkage specifications and #if blocks, which become its wrappers).
type item struct {
	file       *cudaFile
	kind       string
	start, end int // original byte span, CUDA qualifiers included
	names      []string
	refs       map[string]bool
	quals      []string
	node       *ts.Node // function_definition for functions; the declaration node otherwise
	wrappers   []wrapper
	template   *ts.Node // template_parameter_list when templated
	include    string   // include path for itemInclude
	system     bool     // <...> include
	// elseOf is the #if block's key for a local include of its #else
	// branch: spliced only when no local include of the first branch
	// resolves in the tree (#ifdef OTHER_BACKEND / #else / the CUDA helper).
	elseOf    string
	constexpr bool
}

// wrapper is an enclosing construct re-emitted around isolated items.
type wrapper struct {
	key         string // identity, e.g. "ns@123"
	open, close string
}

// cudaFile is one parsed CUDA (or C++) source.
type cudaFile struct {
	path   string // repo-relative (for inline sources: the Python file)
	src    []byte // original text
	masked []byte
	marks  []Masked
	tree   *ts.Tree
	items  []*item
	// lineBase is added to line numbers (inline sources inside Python files).
	lineBase int
	errors   int
}

func (f *cudaFile) close() {
	if f.tree != nil {
		f.tree.Close()
		f.tree = nil
	}
}

func (f *cudaFile) text(n *ts.Node) string { return ts.Text(n, f.src) }

// line returns the 1-based line of byte offset off, in the repo file.
func (f *cudaFile) line(off int) int {
	return strings.Count(string(f.src[:off]), "\n") + 1 + f.lineBase
}

// parseCUDA masks and parses src, then splits it into items.
func parseCUDA(ctx context.Context, p *ts.Parser, path string, src []byte, lineBase int) (*cudaFile, error) {
	masked, marks := Mask(src)
	tree, err := p.Parse(ctx, masked)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	f := &cudaFile{path: path, src: src, masked: masked, marks: marks, tree: tree, lineBase: lineBase, errors: tree.ErrorCount()}
	f.collect(tree.Root(), nil)
	return f, nil
}

func (f *cudaFile) collect(parent *ts.Node, wrappers []wrapper) {
	for i := 0; i < int(parent.NamedChildCount()); i++ {
		f.collectNode(parent.NamedChild(i), wrappers)
	}
}

func (f *cudaFile) collectNode(n *ts.Node, wrappers []wrapper) {
	{
		switch n.Type() {
		case "comment", "preproc_call", "static_assert_declaration", ";", "identifier", "ERROR":
			return
		case "namespace_definition":
			name := ""
			if nm := n.ChildByFieldName("name"); nm != nil {
				name = f.text(nm)
			}
			body := n.ChildByFieldName("body")
			if body == nil {
				return
			}
			open := "namespace {"
			if name != "" {
				open = "namespace " + name + " {"
			}
			w := wrapper{key: fmt.Sprintf("ns@%d", n.StartByte()), open: open, close: strings.TrimSpace("} // namespace " + name)}
			f.collect(body, appendWrap(wrappers, w))
			return
		case "linkage_specification":
			body := n.ChildByFieldName("body")
			if body != nil && body.Type() == "declaration_list" {
				lang := ""
				if v := n.ChildByFieldName("value"); v != nil {
					lang = f.text(v)
				}
				w := wrapper{key: fmt.Sprintf("ext@%d", n.StartByte()), open: "extern " + lang + " {", close: "}"}
				f.collect(body, appendWrap(wrappers, w))
				return
			}
			if body != nil {
				it := f.classify(body, wrappers)
				if it != nil {
					it.start = int(n.StartByte())
					it.start = f.extendQuals(it.start)
					f.items = append(f.items, it)
				}
			}
			return
		case "preproc_ifdef", "preproc_if":
			if guard := includeGuard(f, n); guard {
				f.collect(n, wrappers)
				return
			}
			head := strings.SplitN(f.text(n), "\n", 2)[0]
			w := wrapper{key: fmt.Sprintf("if@%d", n.StartByte()), open: head, close: "#endif"}
			f.collectIf(n, appendWrap(wrappers, w))
			return
		}
		if it := f.classify(n, wrappers); it != nil {
			f.items = append(f.items, it)
		}
	}
}

// collectIf collects the first branch of a conditional block (the #else
// branch is dropped: isolation keeps the configuration the code is written for).
func (f *cudaFile) collectIf(n *ts.Node, wrappers []wrapper) {
	for i := 0; i < int(n.NamedChildCount()); i++ {
		c := n.NamedChild(i)
		if c.Type() == "preproc_else" || c.Type() == "preproc_elif" || c.Type() == "preproc_elifdef" {
			f.collectElseIncludes(c, wrappers)
			break
		}
		if i == 0 && (c.Type() == "identifier" || strings.HasSuffix(c.Type(), "expression")) {
			continue // the condition
		}
		f.collectNode(c, wrappers)
	}
}

// collectElseIncludes keeps the local includes of an #else branch as
// fallbacks of the block's first branch (flatten decides).
func (f *cudaFile) collectElseIncludes(n *ts.Node, wrappers []wrapper) {
	if len(wrappers) == 0 {
		return
	}
	key := wrappers[len(wrappers)-1].key
	outer := wrappers[:len(wrappers)-1]
	for i := 0; i < int(n.NamedChildCount()); i++ {
		c := n.NamedChild(i)
		if c.Type() != "preproc_include" {
			continue
		}
		if it := f.classify(c, outer); it != nil && it.kind == itemInclude && !it.system {
			it.elseOf = key
			f.items = append(f.items, it)
		}
	}
}

func includeGuard(f *cudaFile, n *ts.Node) bool {
	if n.Type() != "preproc_ifdef" || !strings.HasPrefix(f.text(n), "#ifndef") {
		return false
	}
	name := n.ChildByFieldName("name")
	for i := 0; i < int(n.NamedChildCount()); i++ {
		c := n.NamedChild(i)
		if c.Type() == "preproc_def" {
			nm := c.ChildByFieldName("name")
			return name != nil && nm != nil && f.text(nm) == f.text(name)
		}
		if c.Type() != "identifier" && c.Type() != "comment" {
			return false
		}
	}
	return false
}

func appendWrap(ws []wrapper, w wrapper) []wrapper {
	out := make([]wrapper, len(ws), len(ws)+1)
	copy(out, ws)
	return append(out, w)
}

// extendQuals moves start back over masked CUDA qualifiers that precede it.
func (f *cudaFile) extendQuals(start int) int {
	for {
		j := start
		for j > 0 && isSpace(f.src[j-1]) {
			j--
		}
		moved := false
		for _, m := range f.marks {
			if m.End == j && m.Kind != "launch" {
				start = m.Start
				moved = true
				break
			}
		}
		if !moved {
			return start
		}
	}
}

// qualsIn returns the masked qualifiers inside [s,e).
func (f *cudaFile) qualsIn(s, e int) []string {
	var q []string
	for _, m := range f.marks {
		if m.Start >= s && m.End <= e && m.Kind != "launch" {
			q = append(q, m.Kind)
		}
	}
	return q
}

func hasQual(qs []string, q string) bool {
	for _, x := range qs {
		if x == q {
			return true
		}
	}
	return false
}

var includeRE = regexp.MustCompile(`#\s*include\s*([<"])([^>"]+)[>"]`)

func (f *cudaFile) classify(n *ts.Node, wrappers []wrapper) *item {
	it := &item{file: f, start: int(n.StartByte()), end: int(n.EndByte()), node: n, wrappers: wrappers, kind: itemOther}
	inner := n
	if n.Type() == "template_declaration" {
		it.template = n.ChildByFieldName("parameters")
		for i := 0; i < int(n.NamedChildCount()); i++ {
			c := n.NamedChild(i)
			if c.Type() != "template_parameter_list" && c.Type() != "comment" {
				inner = c
			}
		}
		it.node = inner
	}
	switch inner.Type() {
	case "preproc_include":
		it.kind = itemInclude
		if m := includeRE.FindStringSubmatch(f.text(inner)); m != nil {
			it.include, it.system = m[2], m[1] == "<"
		}
		it.end = trimEnd(f.src, it.end)
		return it
	case "preproc_def", "preproc_function_def":
		it.kind = itemMacro
		if nm := inner.ChildByFieldName("name"); nm != nil {
			it.names = []string{f.text(nm)}
		}
		it.end = trimEnd(f.src, it.end)
	case "function_definition":
		it.start = f.extendQuals(it.start)
		it.quals = f.qualsIn(it.start, int(inner.ChildByFieldName("body").StartByte()))
		it.names = []string{funcName(f, inner.ChildByFieldName("declarator"))}
		it.constexpr = strings.Contains(f.text(inner)[:int(inner.ChildByFieldName("body").StartByte()-inner.StartByte())], "constexpr")
		switch {
		case hasQual(it.quals, "__global__"):
			it.kind = itemKernel
		case hasQual(it.quals, "__device__"):
			it.kind = itemDevice
		case it.constexpr:
			it.kind = itemConstFn
		default:
			it.kind = itemHostFn
		}
	case "declaration", "field_declaration":
		it.start = f.extendQuals(it.start)
		it.quals = f.qualsIn(it.start, it.end)
		d := inner.ChildByFieldName("declarator")
		if d != nil && findType(d, "function_declarator") != nil && inner.ChildByFieldName("declarator").Type() != "init_declarator" {
			it.kind = itemProto
			it.names = []string{funcName(f, d)}
			break
		}
		for _, c := range fieldChildren(inner, "declarator") {
			if nm := declName(f, c); nm != "" {
				it.names = append(it.names, nm)
			}
		}
		head := f.text(inner)
		switch {
		case hasQual(it.quals, "__constant__") || hasQual(it.quals, "__device__") || hasQual(it.quals, "__managed__"):
			it.kind = itemDevVar
		case regexp.MustCompile(`^\s*(static\s+)?(constexpr|const)\b`).MatchString(head) || strings.Contains(strings.SplitN(head, "=", 2)[0], "constexpr") ||
			constQualified(f, inner):
			it.kind = itemConstVar
		default:
			it.kind = itemHostVar
		}
		if t := inner.ChildByFieldName("type"); t != nil && len(it.names) == 0 {
			if nm := typeName(f, t); nm != "" {
				it.kind = itemType
				it.names = append(it.names, nm)
				it.names = append(it.names, enumerators(f, t)...)
			}
		}
	case "struct_specifier", "class_specifier", "union_specifier", "enum_specifier":
		it.kind = itemType
		if nm := typeName(f, inner); nm != "" {
			it.names = append(it.names, nm)
		}
		it.names = append(it.names, enumerators(f, inner)...)
		// include the trailing ';'
		if j := skipSpace(f.src, it.end); j < len(f.src) && f.src[j] == ';' {
			it.end = j + 1
		}
	case "type_definition":
		it.kind = itemType
		for _, c := range fieldChildren(inner, "declarator") {
			if nm := declName(f, c); nm != "" {
				it.names = append(it.names, nm)
			}
		}
		if t := inner.ChildByFieldName("type"); t != nil {
			it.names = append(it.names, enumerators(f, t)...)
		}
	case "alias_declaration":
		it.kind = itemType
		if nm := inner.ChildByFieldName("name"); nm != nil {
			it.names = []string{f.text(nm)}
		}
	case "using_declaration":
		it.kind = itemUsing
	case "template_instantiation":
		it.kind = itemOther
	default:
		it.kind = itemOther
	}
	// identifiers of the original text, so names inside masked spans such as
	// __launch_bounds__(THREADS) count as references too
	it.refs = identRefs(f.src[it.start:it.end])
	for _, nm := range it.names {
		delete(it.refs, nm)
	}
	if it.template != nil {
		for _, p := range templateParams(f, it.template) {
			delete(it.refs, p.name)
		}
	}
	return it
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && isSpace(src[i]) {
		i++
	}
	return i
}

func trimEnd(src []byte, e int) int {
	for e > 0 && isSpace(src[e-1]) {
		e--
	}
	return e
}

func findType(n *ts.Node, typ string) *ts.Node {
	var found *ts.Node
	ts.Walk(n, func(x *ts.Node) bool {
		if found != nil {
			return false
		}
		if x.Type() == typ {
			found = x
			return false
		}
		return x.Type() != "compound_statement"
	})
	return found
}

// funcName returns the (unqualified) name of a function declarator.
func funcName(f *cudaFile, d *ts.Node) string {
	for d != nil {
		switch d.Type() {
		case "function_declarator", "pointer_declarator", "reference_declarator", "init_declarator":
			d = d.ChildByFieldName("declarator")
		case "template_function":
			d = d.ChildByFieldName("name")
		case "qualified_identifier":
			d = d.ChildByFieldName("name")
		case "identifier", "field_identifier", "operator_name", "destructor_name":
			return f.text(d)
		default:
			return f.text(d)
		}
	}
	return ""
}

// declName returns the declared name of a (possibly init/array/pointer)
// declarator.
func declName(f *cudaFile, d *ts.Node) string {
	for d != nil {
		switch d.Type() {
		case "identifier", "type_identifier", "field_identifier":
			return f.text(d)
		case "init_declarator", "array_declarator", "pointer_declarator", "reference_declarator", "function_declarator", "parenthesized_declarator":
			nd := d.ChildByFieldName("declarator")
			if nd == nil && d.NamedChildCount() > 0 {
				nd = d.NamedChild(0)
			}
			d = nd
		default:
			return ""
		}
	}
	return ""
}

func typeName(f *cudaFile, t *ts.Node) string {
	switch t.Type() {
	case "struct_specifier", "class_specifier", "union_specifier", "enum_specifier":
		if t.ChildByFieldName("body") == nil {
			return ""
		}
		if nm := t.ChildByFieldName("name"); nm != nil {
			return f.text(nm)
		}
	}
	return ""
}

func enumerators(f *cudaFile, t *ts.Node) []string {
	if t.Type() != "enum_specifier" {
		return nil
	}
	body := t.ChildByFieldName("body")
	if body == nil {
		return nil
	}
	var out []string
	for i := 0; i < int(body.NamedChildCount()); i++ {
		c := body.NamedChild(i)
		if c.Type() == "enumerator" {
			if nm := c.ChildByFieldName("name"); nm != nil {
				out = append(out, f.text(nm))
			}
		}
	}
	return out
}

type tparam struct {
	name    string
	typed   bool   // typename/class parameter
	ctype   string // type of a non-type parameter
	deflt   string
	variadc bool
}

func templateParams(f *cudaFile, list *ts.Node) []tparam {
	var out []tparam
	if list == nil {
		return nil
	}
	for i := 0; i < int(list.NamedChildCount()); i++ {
		c := list.NamedChild(i)
		p := tparam{}
		switch c.Type() {
		case "type_parameter_declaration", "variadic_type_parameter_declaration":
			p.typed = true
			p.variadc = c.Type() != "type_parameter_declaration"
			if c.NamedChildCount() > 0 {
				p.name = f.text(c.NamedChild(int(c.NamedChildCount()) - 1))
			}
		case "optional_type_parameter_declaration":
			p.typed = true
			if nm := c.ChildByFieldName("name"); nm != nil {
				p.name = f.text(nm)
			}
			if d := c.ChildByFieldName("default_type"); d != nil {
				p.deflt = f.text(d)
			}
		case "parameter_declaration", "optional_parameter_declaration":
			if t := c.ChildByFieldName("type"); t != nil {
				p.ctype = f.text(t)
			}
			if d := c.ChildByFieldName("declarator"); d != nil {
				p.name = declName(f, d)
			}
			if d := c.ChildByFieldName("default_value"); d != nil {
				p.deflt = f.text(d)
			}
		default:
			continue
		}
		out = append(out, p)
	}
	return out
}

var identRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// identRefs returns the identifiers of a masked source span, skipping
// comments and literals.
func identRefs(b []byte) map[string]bool {
	refs := map[string]bool{}
	spans := literalSpans(b)
	k := 0
	for _, m := range identRE.FindAllIndex(b, -1) {
		for k < len(spans) && spans[k][1] <= m[0] {
			k++
		}
		if k < len(spans) && spans[k][0] <= m[0] {
			continue
		}
		if m[0] > 0 && (b[m[0]-1] >= '0' && b[m[0]-1] <= '9' || b[m[0]-1] == '.') && isNumberTail(b, m[0]) {
			continue
		}
		refs[string(b[m[0]:m[1]])] = true
	}
	return refs
}

// isNumberTail reports whether the identifier at i continues a number literal
// (e.g. the "f" of 1.0f).
func isNumberTail(b []byte, i int) bool {
	j := i - 1
	for j >= 0 && (b[j] >= '0' && b[j] <= '9' || b[j] == '.') {
		j--
	}
	return j < 0 || !isIdent(b[j])
}

// fieldChildren returns the children of n stored under field (a declaration
// can have several declarators).
func fieldChildren(n *ts.Node, field string) []*ts.Node {
	var out []*ts.Node
	for i := 0; i < int(n.ChildCount()); i++ {
		if n.FieldNameForChild(i) == field {
			out = append(out, n.Child(i))
		}
	}
	return out
}

// constQualified: a declaration whose type is const-qualified after its
// base type (`int const threadsPerBlock = 64;`, mmcv's nms).
func constQualified(f *cudaFile, decl *ts.Node) bool {
	for i := 0; i < int(decl.NamedChildCount()); i++ {
		c := decl.NamedChild(i)
		if c.Type() == "type_qualifier" && (f.text(c) == "const" || f.text(c) == "constexpr") {
			return true
		}
	}
	return false
}
