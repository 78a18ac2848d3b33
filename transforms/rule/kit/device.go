package kit

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// DeviceExpr is the right-hand side of the portable DEVICE definition:
// the CUDA or TPU device this process uses, else the CPU.
// Any other accelerator (MPS, XPU) is the CPU: the code being migrated took
// its CPU path there (torch.cuda.is_available() was False), and a portable
// rewrite keeps that path rather than widening a CUDA-only one to it. So
// DEVICE.type is "cuda", "tpu" or "cpu", and DEVICE.type != "cpu" is True
// exactly where the original's CUDA probe was, plus on a TPU.
// It is written as ruff format writes it (line length 100).
const DeviceExpr = "torch.device(\n" +
	"    torch.accelerator.current_accelerator().type\n" +
	"    if torch.accelerator.is_available()\n" +
	"    and torch.accelerator.current_accelerator().type in (\"cuda\", \"tpu\")\n" +
	"    else \"cpu\"\n" +
	")"

// PrevDeviceExpr is DeviceExpr as the previous version wrote it, its
// condition on one line of 104 columns. A module holding it counts as
// migrated, as with LegacyDeviceExpr.
const PrevDeviceExpr = "torch.device(\n" +
	"    torch.accelerator.current_accelerator().type\n" +
	"    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in (\"cuda\", \"tpu\")\n" +
	"    else \"cpu\"\n" +
	")"

// LegacyDeviceExpr is the DEVICE definition earlier versions wrote (any
// accelerator, MPS included). A module holding it counts as migrated: the name
// stays pallasify's own and no second definition is added.
const LegacyDeviceExpr = `torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")`

// Accelerated is DEVICE's test for "a CUDA or TPU device" (see DeviceExpr).
func Accelerated(dev string) string { return dev + `.type != "cpu"` }

// deviceNames are the names tried, in order, for the DEVICE definition.
var deviceNames = [...]string{"DEVICE", "ACCEL_DEVICE", "PALLASIFY_DEVICE"}

// Start and End are a node's byte offsets.
func Start(n *ts.Node) int { return int(n.StartByte()) }

// End is the byte offset just after n.
func End(n *ts.Node) int { return int(n.EndByte()) }

// Mentions reports whether src contains any of words: the cheap test every
// rule makes before walking the tree.
func Mentions(src []byte, words ...string) bool {
	for _, w := range words {
		if bytes.Contains(src, []byte(w)) {
			return true
		}
	}
	return false
}

// Device returns the name of this module's DEVICE value: the first of
// DEVICE, ACCEL_DEVICE, PALLASIFY_DEVICE that the module does not bind, or
// that it binds only through the pallasify definition itself. Deterministic
// and stable across passes (the definition it adds marks the name as its own).
func Device(p *rule.Pass) string {
	bound := Bindings(p, "DEVICE")
	for _, n := range deviceNames {
		own := bound[n]
		if own == 0 || own == ownBinding {
			return n
		}
	}
	for i := 2; ; i++ {
		n := "PALLASIFY_DEVICE_" + strconv.Itoa(i)
		if own := bound[n]; own == 0 || own == ownBinding {
			return n
		}
	}
}

// DeviceType is DEVICE's type string, e.g. "DEVICE.type".
func DeviceType(p *rule.Pass) string { return Device(p) + ".type" }

// DevicePrelude is the module-level definition of name (see Device). Every
// family uses this one value so the definition is inserted once.
func DevicePrelude(name string) rule.Prelude {
	return rule.Prelude{
		Key: "00-device",
		Text: "# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep\n" +
			"# the CPU path).\n" +
			name + " = " + DeviceExpr + "\n",
		Marker:  name + " = torch.accelerator.",
		Also:    []string{name + " = " + PrevDeviceExpr},
		Imports: []string{"import torch"},
	}
}

// AtPrelude is the module-level helper fn that names device index i of
// DEVICE (dev): `torch.device(DEVICE.type, i)` on CUDA, where one process may
// drive several devices and an index picks one, and DEVICE itself everywhere
// else (a TPU process sees its one chip as tpu:0, so `tpu:<rank>` does not
// exist; the CPU has no indices). It follows the DEVICE definition.
func AtPrelude(fn, dev string) rule.Prelude {
	return rule.Prelude{
		Key:     "01-device-at",
		Text:    atHelper(fn, dev),
		Marker:  "def " + fn + "(",
		Imports: []string{"import torch"},
	}
}

func atHelper(fn, dev string) string {
	return "def " + fn + "(index):\n" +
		"    \"\"\"pallasify: the CUDA device with this index; elsewhere " + dev + ".\n\n" +
		"    A TPU process sees its one chip as tpu:0.\n" +
		"    \"\"\"\n" +
		"    if " + dev + ".type == \"cuda\":\n" +
		"        return torch.device(" + dev + ".type, index)\n" +
		"    return " + dev + "\n"
}

// legacyAtHelper is the device-index helper earlier versions wrote (its
// lines longer than 100 columns): a module holding it keeps the name.
func legacyAtHelper(fn, dev string) string {
	return "def " + fn + "(index):\n" +
		"    \"\"\"pallasify: the CUDA device with this index; elsewhere " + dev + " (a TPU process sees its one chip as tpu:0).\"\"\"\n" +
		"    return torch.device(" + dev + ".type, index) if " + dev + ".type == \"cuda\" else " + dev + "\n"
}

// atNames are the names tried, in order, for the device-index helper.
var atNames = [...]string{"device_at", "accel_device_at", "pallasify_device_at"}

// At returns the name of this module's device-index helper (see AtPrelude)
// for DEVICE name dev: the first of device_at, accel_device_at,
// pallasify_device_at that the module neither binds nor uses (a name used but
// not bound may come from a star import), unless the module holds the
// pallasify helper of that name itself.
func At(p *rule.Pass, dev string) string {
	taken := Bindings(p, "device_at")
	WalkHits(p, []string{"device_at"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment":
			return false
		case "identifier":
			taken[p.Text(n)] = 1
		}
		return true
	})
	free := func(n string) bool {
		return taken[n] == 0 || OwnHelper(p, n, atHelper(n, dev), legacyAtHelper(n, dev))
	}
	for _, n := range atNames {
		if free(n) {
			return n
		}
	}
	for i := 2; ; i++ {
		if n := "pallasify_device_at_" + strconv.Itoa(i); free(n) {
			return n
		}
	}
}

// Dev memoises a module's DEVICE name for one rule run (finding it walks the
// tree once).
type Dev struct {
	p    *rule.Pass
	name string
	at   string
}

// NewDev returns the lazy DEVICE name of p's module.
func NewDev(p *rule.Pass) *Dev { return &Dev{p: p} }

// Name is the DEVICE name (see Device), or LazyDevice in a library module
// (see Placement).
func (d *Dev) Name() string {
	if d.name == "" && Library(d.p) {
		d.name = LazyDevice
	}
	if d.name == "" {
		d.name = Device(d.p)
	}
	return d.name
}

// Type is "<DEVICE>.type".
func (d *Dev) Type() string { return d.Name() + ".type" }

// AtName is the name of the device-index helper (see At).
func (d *Dev) AtName() string {
	if d.at == "" {
		d.at = At(d.p, d.Name())
	}
	return d.at
}

// At is the portable expression for device index idx (an expression's
// text): "<helper>(idx)", a torch.device. Fixes using it must be made with
// AtFix, which adds the helper.
func (d *Dev) At(idx string) string { return d.AtName() + "(" + idx + ")" }

// Fix returns a fix whose edits rely on DEVICE (and so on torch).
func (d *Dev) Fix(title string, safety rule.Safety, edits ...rule.Edit) *rule.Fix {
	pres := []rule.Prelude{DevicePrelude(d.Name())}
	switch {
	case d.Name() == LazyDevice:
		pres = []rule.Prelude{SharedPrelude(d.p, LazyDevicePrelude(), lazyDeviceFn)}
	case SharesHelpers(d.p):
		pres = []rule.Prelude{EntryDevicePrelude(d.Name()), SharedPrelude(d.p, LazyDevicePrelude(), lazyDeviceFn)}
	}
	return &rule.Fix{Title: title, Safety: safety, Edits: edits, Preludes: pres, Imports: []string{"import torch"}}
}

// HelperDevice is the device the module's helper definitions name: DEVICE,
// or pallasify_device() where they are the package helper module's
// (SharesHelpers, a library module).
func (d *Dev) HelperDevice() string {
	if SharesHelpers(d.p) {
		return LazyDevice
	}
	return d.Name()
}

// AtFix returns a fix whose edits rely on DEVICE and on the device-index
// helper (see At).
func (d *Dev) AtFix(title string, safety rule.Safety, edits ...rule.Edit) *rule.Fix {
	f := d.Fix(title, safety, edits...)
	f.Preludes = append(f.Preludes, SharedPrelude(d.p, AtPrelude(d.AtName(), d.HelperDevice()), d.AtName()))
	return f
}

// TorchFix returns a fix whose edits rely on torch only.
func TorchFix(title string, safety rule.Safety, edits ...rule.Edit) *rule.Fix {
	return &rule.Fix{Title: title, Safety: safety, Edits: edits, Imports: []string{"import torch"}}
}

const ownBinding = 2

// Bindings maps each name containing needle that the module binds anywhere
// (assignment targets, parameters, imports, for/with targets, def and class
// names, global statements) to 1, or to ownBinding when the only binding is
// a pallasify DEVICE definition. Only subtrees mentioning needle are walked.
func Bindings(p *rule.Pass, needle string) map[string]int {
	out := map[string]int{}
	mark := func(name string, own bool) {
		if own {
			if out[name] == 0 {
				out[name] = ownBinding
			}
			return
		}
		out[name] = 1
	}
	var targets func(n *ts.Node, own bool)
	targets = func(n *ts.Node, own bool) {
		if n == nil {
			return
		}
		switch n.Type() {
		case "identifier":
			mark(p.Text(n), own)
		case "pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern", "parenthesized_expression", "tuple", "list":
			for _, c := range ts.Children(n) {
				targets(c, own)
			}
		}
	}
	for local := range p.Imports.Modules {
		mark(local, false)
	}
	for local := range p.Imports.Names {
		mark(local, false)
	}
	WalkHits(p, []string{needle}, func(n *ts.Node) bool {
		switch n.Type() {
		case "string", "comment":
			return false
		case "assignment":
			left := n.ChildByFieldName("left")
			right := n.ChildByFieldName("right")
			own := left != nil && left.Type() == "identifier" && right != nil &&
				(p.Text(right) == DeviceExpr || p.Text(right) == PrevDeviceExpr || p.Text(right) == LegacyDeviceExpr ||
					p.Text(right) == LazyDevice && importsShared(p, lazyDeviceFn))
			targets(left, own)
		case "augmented_assignment", "for_statement", "for_in_clause":
			targets(n.ChildByFieldName("left"), false)
		case "named_expression":
			targets(n.ChildByFieldName("name"), false)
		case "as_pattern_target":
			for _, c := range ts.Children(n) {
				targets(c, false)
			}
		case "function_definition", "class_definition":
			targets(n.ChildByFieldName("name"), false)
		case "parameters", "lambda_parameters":
			for _, c := range ts.Children(n) {
				switch c.Type() {
				case "identifier":
					mark(p.Text(c), false)
				default:
					if nm := c.ChildByFieldName("name"); nm != nil {
						mark(p.Text(nm), false)
					} else if c.NamedChildCount() > 0 && c.NamedChild(0).Type() == "identifier" {
						mark(p.Text(c.NamedChild(0)), false)
					}
				}
			}
		case "global_statement", "nonlocal_statement":
			for _, c := range ts.Children(n) {
				targets(c, false)
			}
		}
		return true
	})
	return out
}

// Dotted returns the text of an identifier or a chain of attribute accesses
// on identifiers ("torch.cuda.amp.autocast"), or "".
func Dotted(p *rule.Pass, n *ts.Node) string {
	return p.Dotted(n)
}

// Qualify resolves a dotted name through the module's imports. A chain whose
// head is the bare name torch counts as torch even without an import (the
// file may get it through a star import).
func Qualify(p *rule.Pass, dotted string) string {
	if dotted == "" {
		return ""
	}
	if q := p.Imports.Qualify(dotted); q != "" {
		return q
	}
	if dotted == "torch" || strings.HasPrefix(dotted, "torch.") {
		return dotted
	}
	return ""
}

// Callee returns a call's function node and its qualified name ("" when the
// function is not an imported dotted name).
func Callee(p *rule.Pass, call *ts.Node) (*ts.Node, string) {
	fn := call.ChildByFieldName("function")
	return fn, Qualify(p, Dotted(p, fn))
}

// LastName is the last component of a call's function ("to" for x.y.to(...)).
func LastName(p *rule.Pass, call *ts.Node) string {
	fn := call.ChildByFieldName("function")
	switch fn.Type() {
	case "identifier":
		return p.Text(fn)
	case "attribute":
		return p.Text(fn.ChildByFieldName("attribute"))
	}
	return ""
}

// Args is a call's argument list ("" node for generator-argument calls).
func Args(call *ts.Node) *ts.Node {
	a := call.ChildByFieldName("arguments")
	if a == nil || a.Type() != "argument_list" {
		return nil
	}
	return a
}

// ArgList splits an argument list into positional arguments, keyword
// arguments by name, and whether *args/**kwargs appear.
type ArgList struct {
	Node       *ts.Node
	Positional []*ts.Node
	Keywords   map[string]*ts.Node // name -> keyword_argument node
	Splat      bool
	All        []*ts.Node // every argument, in order (comments excluded)
	// Lead is an argument of Node before All that is not part of the list
	// (functools.partial's callee, see Through): insertions into an empty
	// list go after it.
	Lead *ts.Node
}

// Arguments parses a call's argument list; ok is false for calls whose
// argument is a bare generator expression.
func Arguments(p *rule.Pass, call *ts.Node) (ArgList, bool) {
	a := Args(call)
	if a == nil {
		return ArgList{}, false
	}
	al := ArgList{Node: a, Keywords: map[string]*ts.Node{}}
	for _, c := range ts.Children(a) {
		switch c.Type() {
		case "comment":
			continue
		case "keyword_argument":
			al.Keywords[p.Text(c.ChildByFieldName("name"))] = c
		case "list_splat", "dictionary_splat":
			al.Splat = true
		default:
			al.Positional = append(al.Positional, c)
		}
		al.All = append(al.All, c)
	}
	return al, true
}

// KwValue is a keyword argument's value node, or nil.
func (a ArgList) KwValue(name string) *ts.Node {
	if kw := a.Keywords[name]; kw != nil {
		return kw.ChildByFieldName("value")
	}
	return nil
}

// InsertFirst returns the insertion of text as the first argument ("text, "
// before existing arguments).
func (a ArgList) InsertFirst(text string) rule.Edit {
	at := Start(a.Node) + 1
	if len(a.All) > 0 {
		return rule.Edit{Start: Start(a.All[0]), End: Start(a.All[0]), New: text + ", "}
	}
	if a.Lead != nil {
		return rule.Edit{Start: End(a.Lead), End: End(a.Lead), New: ", " + text}
	}
	return rule.Edit{Start: at, End: at, New: text}
}

// Append returns the insertion of text as the last argument, after the last
// argument (so a trailing comma stays valid).
func (a ArgList) Append(text string) rule.Edit {
	if len(a.All) == 0 && a.Lead != nil {
		return rule.Edit{Start: End(a.Lead), End: End(a.Lead), New: ", " + text}
	}
	if len(a.All) == 0 {
		at := Start(a.Node) + 1
		return rule.Edit{Start: at, End: at, New: text}
	}
	last := a.All[len(a.All)-1]
	return rule.Edit{Start: End(last), End: End(last), New: ", " + text}
}

// Drop returns the edit removing argument n (a node of a.All) together with
// the comma that joins it to its neighbour.
func (a ArgList) Drop(src []byte, n *ts.Node) rule.Edit {
	idx := -1
	for i, c := range a.All {
		if c.Equal(n) {
			idx = i
		}
	}
	if idx > 0 {
		return rule.Edit{Start: End(a.All[idx-1]), End: End(n)}
	}
	if a.Lead != nil {
		return rule.Edit{Start: End(a.Lead), End: End(n)}
	}
	e := End(n)
	j := skipSpace(src, e)
	if j < len(src) && src[j] == ',' {
		e = skipBlank(src, j+1)
	}
	return rule.Edit{Start: Start(n), End: e}
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return i
}

func skipBlank(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}

// Str is a Python string literal that names a CUDA device.
type Str struct {
	Node  *ts.Node
	Quote string // the opening quote ("\"", "'", "\"\"\"", ...)
	// Index is the device index: "" for "cuda", the digits for "cuda:N",
	// the interpolated expression's text for f"cuda:{expr}".
	Index     string
	IndexNode *ts.Node // the interpolation's expression for f-strings
	FString   bool
	// cudaStart is the offset of the word "cuda" inside the literal.
	cudaStart int
}

var cudaIndexRE = regexp.MustCompile(`^cuda(?::([0-9]+))?$`)

// DeviceString parses n as "cuda", "cuda:N" or f"cuda:{expr}". Byte strings,
// implicit concatenations and anything else return ok=false.
func DeviceString(p *rule.Pass, n *ts.Node) (Str, bool) {
	if n == nil || n.Type() != "string" {
		return Str{}, false
	}
	kids := ts.Children(n)
	if len(kids) < 2 || kids[0].Type() != "string_start" {
		return Str{}, false
	}
	start := p.Text(kids[0])
	prefix := strings.ToLower(strings.TrimRight(start, "\"'"))
	quote := start[len(prefix):]
	s := Str{Node: n, Quote: quote}
	switch prefix {
	case "", "u", "r":
	case "f", "rf", "fr":
		s.FString = true
	default:
		return Str{}, false
	}
	body := kids[1 : len(kids)-1]
	if len(body) == 1 && body[0].Type() == "string_content" {
		m := cudaIndexRE.FindStringSubmatch(p.Text(body[0]))
		if m == nil {
			return Str{}, false
		}
		s.Index = m[1]
		s.cudaStart = Start(body[0])
		return s, true
	}
	if s.FString && len(body) == 2 && body[0].Type() == "string_content" && p.Text(body[0]) == "cuda:" && body[1].Type() == "interpolation" {
		expr := body[1].ChildByFieldName("expression")
		if expr == nil || body[1].NamedChildCount() != 1 {
			return Str{}, false // format specs and conversions are left alone
		}
		s.IndexNode = expr
		s.Index = p.Text(expr)
		s.cudaStart = Start(body[0])
		return s, true
	}
	return Str{}, false
}

// formatIndexRE matches the literal of a formatted device string:
// "cuda:{}" (str.format) or "cuda:%d" / "cuda:%s" / "cuda:%i" (%).
var formatIndexRE = regexp.MustCompile(`^cuda:(\{\}|\{0\}|%d|%s|%i)$`)

// FormattedDevice parses n as a CUDA device string built by formatting one
// index: 'cuda:{}'.format(expr), 'cuda:%d' % expr or "cuda:" + str(expr).
// The Str's Node is the whole expression and IndexNode the index, as for
// f"cuda:{expr}" (so its rewrites replace all of it).
func FormattedDevice(p *rule.Pass, n *ts.Node) (Str, bool) {
	if n == nil {
		return Str{}, false
	}
	lit := func(str *ts.Node, re *regexp.Regexp) (Str, bool) {
		body, ok := PlainString(p, str)
		if !ok || !re.MatchString(body) {
			return Str{}, false
		}
		start := p.Text(str.Child(0))
		prefix := strings.ToLower(strings.TrimRight(start, "\"'"))
		return Str{Node: n, Quote: start[len(prefix):], cudaStart: Start(str.Child(1))}, true
	}
	var s Str
	var idx *ts.Node
	switch n.Type() {
	case "call":
		fn := n.ChildByFieldName("function")
		al, ok := Arguments(p, n)
		if fn == nil || fn.Type() != "attribute" || p.Text(fn.ChildByFieldName("attribute")) != "format" || !ok ||
			len(al.All) != 1 || len(al.Positional) != 1 {
			return Str{}, false
		}
		if s, ok = lit(fn.ChildByFieldName("object"), formatIndexRE); !ok || strings.Contains(p.Text(fn.ChildByFieldName("object")), "%") {
			return Str{}, false
		}
		idx = al.Positional[0]
	case "binary_operator":
		op := n.ChildByFieldName("operator")
		left, right := n.ChildByFieldName("left"), n.ChildByFieldName("right")
		if op == nil || left == nil || right == nil {
			return Str{}, false
		}
		var ok bool
		switch p.Text(op) {
		case "%":
			if right.Type() == "tuple" || right.Type() == "parenthesized_expression" && right.NamedChildCount() == 1 && right.NamedChild(0).Type() == "tuple" {
				return Str{}, false
			}
			if s, ok = lit(left, formatIndexRE); !ok || strings.Contains(p.Text(left), "{") {
				return Str{}, false
			}
			idx = right
		case "+":
			if s, ok = lit(left, cudaColonRE); !ok || right.Type() != "call" || p.Text(right.ChildByFieldName("function")) != "str" {
				return Str{}, false
			}
			al, aok := Arguments(p, right)
			if !aok || len(al.All) != 1 || len(al.Positional) != 1 {
				return Str{}, false
			}
			idx = al.Positional[0]
		default:
			return Str{}, false
		}
	default:
		return Str{}, false
	}
	s.IndexNode, s.Index = idx, p.Text(idx)
	return s, true
}

var cudaColonRE = regexp.MustCompile(`^cuda:$`)

// PlainString returns the content of a simple (non-f, non-bytes,
// single-part) string literal: its source text between the quotes, escapes
// not decoded ("" and true for an empty literal).
func PlainString(p *rule.Pass, n *ts.Node) (string, bool) {
	if n == nil || n.Type() != "string" {
		return "", false
	}
	kids := ts.Children(n)
	if len(kids) < 2 || kids[0].Type() != "string_start" {
		return "", false
	}
	prefix := strings.ToLower(strings.TrimRight(p.Text(kids[0]), "\"'"))
	if prefix != "" && prefix != "u" && prefix != "r" {
		return "", false
	}
	if len(kids) == 2 {
		return "", true
	}
	if len(kids) != 3 || kids[1].Type() != "string_content" {
		return "", false
	}
	return p.Text(kids[1]), true
}

// Literal returns text as a string literal in s's quote style.
func (s Str) Literal(text string) string { return s.Quote + text + s.Quote }

// ReplaceWord returns the edit that replaces the word "cuda" inside the
// literal (keeping quotes, prefix and any index) with text.
func (s Str) ReplaceWord(text string) rule.Edit {
	return rule.Edit{Start: s.cudaStart, End: s.cudaStart + 4, New: text}
}

// Replace returns the edit replacing the whole literal with text.
func (s Str) Replace(text string) rule.Edit {
	return rule.Edit{Start: Start(s.Node), End: End(s.Node), New: text}
}

// TPULiteral is the literal for the tpu target: "tpu" for "cuda" and for an
// f-string index (each process sees its chip as tpu:0), "tpu:0" for "cuda:N".
func (s Str) TPULiteral() string {
	if s.Index != "" && s.IndexNode == nil {
		return s.Literal("tpu:0")
	}
	return s.Literal("tpu")
}

// PerProcessIndex reports whether an index expression is the per-process
// device index: the literal 0, or an expression that names a rank or a GPU
// slot (local_rank, args.gpu, int(os.environ["LOCAL_RANK"])). Under torchrun
// each such process owns one TPU chip, which it sees as tpu:0.
func PerProcessIndex(text string) bool {
	t := strings.TrimSpace(text)
	if t == "0" || t == "" {
		return true
	}
	l := strings.ToLower(t)
	return strings.Contains(l, "rank") || strings.Contains(l, "gpu")
}

// IndexLike reports whether an expression looks like a device index rather
// than a device value (an integer, or a name about ranks, GPUs or ids). An
// element of a list of ids (device_ids[0], args.gpu_ids[i]) and a name ending
// in "id" (device_id) are indices: an int device means a CUDA device, so
// `.cuda(device_ids[0])` must not become `.to(device_ids[0])`.
func IndexLike(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	if _, err := strconv.Atoi(t); err == nil {
		return true
	}
	if idName(t) {
		return true
	}
	if strings.Contains(t, "device") || strings.Contains(t, "dev") {
		return false
	}
	return true
}

// idName reports whether t (lower case) is a name ending in "id", or an
// element of a name ending in "ids" (ids[0], self.device_ids[rank]).
func idName(t string) bool {
	sub := false
	for strings.HasSuffix(t, "]") {
		i := strings.LastIndexByte(t, '[')
		if i <= 0 {
			return false
		}
		t, sub = t[:i], true
	}
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		t = t[i+1:]
	}
	for _, r := range t {
		if r != '_' && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	if sub {
		return strings.HasSuffix(t, "ids")
	}
	return t == "id" || strings.HasSuffix(t, "_id")
}

// DeviceIsh reports whether an expression's text names a device or a device
// type: its last name contains "device" or is "dev"/"type", or it is
// str(<device-ish>).
func DeviceIsh(p *rule.Pass, n *ts.Node) bool {
	if n == nil {
		return false
	}
	switch n.Type() {
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return DeviceIsh(p, n.NamedChild(0))
		}
	case "call":
		fn := n.ChildByFieldName("function")
		if p.Text(fn) == "str" {
			if al, ok := Arguments(p, n); ok && len(al.All) == 1 && len(al.Positional) == 1 {
				return DeviceIsh(p, al.Positional[0])
			}
		}
		return false
	case "identifier", "attribute", "subscript":
	default:
		return false
	}
	if n.Type() == "subscript" {
		if s, ok := PlainString(p, n.ChildByFieldName("subscript")); ok {
			return DeviceName(s)
		}
		return false
	}
	name := p.Text(n)
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return DeviceName(name) || name == "type"
}

// DeviceName reports whether an identifier names a device setting: it
// contains "device" (any case) or is "dev".
func DeviceName(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "device") || l == "dev"
}

// ExprStatement returns the expression statement made of exactly n (n is the
// whole statement: `torch.cuda.synchronize()` on its own), or nil. Compare
// EnclosingStatement, the statement n is anywhere inside.
func ExprStatement(n *ts.Node) *ts.Node {
	par := n.Parent()
	if par == nil || par.Type() != "expression_statement" || par.NamedChildCount() != 1 {
		return nil
	}
	return par
}

// LineIndent is the leading whitespace of the line holding off.
func LineIndent(src []byte, off int) string {
	ls := LineStart(src, off)
	i := skipSpace(src, ls)
	return string(src[ls:i])
}

// LineStart is the offset of the start of the line holding off.
func LineStart(src []byte, off int) int {
	for off > 0 && src[off-1] != '\n' {
		off--
	}
	return off
}

// alone reports whether stmt is the only thing on its lines (no ';' and
// nothing but whitespace before it or after it).
func alone(src []byte, stmt *ts.Node) bool {
	s, e := Start(stmt), End(stmt)
	ls := LineStart(src, s)
	if strings.TrimSpace(string(src[ls:s])) != "" {
		return false
	}
	j := skipSpace(src, e)
	return j >= len(src) || src[j] == '\n' || src[j] == '\r' || src[j] == '#'
}

// RemoveStatement returns the edit deleting a simple statement: its whole
// line (a trailing comment with it), or "pass" when it is the only
// statement of its block; the engine removes what a dead `pass` leaves
// (rule/tidy.go). ok is false
// when the statement shares its line with another one.
func RemoveStatement(src []byte, stmt *ts.Node) (rule.Edit, bool) {
	if !alone(src, stmt) {
		return rule.Edit{}, false
	}
	if block := stmt.Parent(); block != nil && block.Type() == "block" && mayEmpty(src, block, stmt) {
		return rule.Edit{Start: Start(stmt), End: End(stmt), New: "pass"}, true
	}
	// The whole line goes, a trailing comment too: it described the
	// statement (the comments above it are the engine's: rule/tidy.go).
	ls := LineStart(src, Start(stmt))
	j := skipSpace(src, End(stmt))
	for j < len(src) && src[j] != '\n' {
		j++
	}
	if j < len(src) {
		j++
	}
	return rule.Edit{Start: ls, End: j}, true
}

// mayEmpty reports whether removing stmt could leave block empty: stmt is
// the first statement, and every other statement may be removed by some rule
// too (an expression statement that mentions cuda). The first such statement
// becomes "pass", so the block never ends up empty.
func mayEmpty(src []byte, block, stmt *ts.Node) bool {
	first := true
	for _, c := range ts.Children(block) {
		if c.Type() == "comment" {
			continue
		}
		if c.Equal(stmt) {
			if !first {
				return false
			}
			continue
		}
		first = false
		if c.Type() != "expression_statement" || !bytes.Contains(src[Start(c):End(c)], []byte("cuda")) {
			return false
		}
	}
	return true
}

// Guarded reports whether n sits inside an if statement whose condition
// already contains probe (e.g. "is_available()").
func Guarded(src []byte, n *ts.Node, probe string) bool {
	for a := n.Parent(); a != nil; a = a.Parent() {
		if a.Type() == "if_statement" {
			if c := a.ChildByFieldName("condition"); c != nil && bytes.Contains(src[Start(c):End(c)], []byte(probe)) {
				return true
			}
		}
	}
	return false
}

// GuardStatement returns the edits that put a simple statement (alone on its
// line) under "if cond:". The statement's text is not rewritten, so edits
// inside it by other fixes still apply. ok is false when the statement is
// already under such a test (for an is_available() condition: under any
// is_available() test).
func GuardStatement(src []byte, stmt *ts.Node, cond string) ([]rule.Edit, bool) {
	probe := cond
	if strings.Contains(cond, "is_available()") {
		probe = "is_available()"
	}
	if !alone(src, stmt) || Guarded(src, stmt, probe) {
		return nil, false
	}
	s := Start(stmt)
	indent := LineIndent(src, s)
	step := "    "
	if strings.Contains(indent, "\t") {
		step = "\t"
	}
	edits := []rule.Edit{{Start: s, End: s, New: "if " + cond + ":\n" + indent + step}}
	// Continuation lines of a multi-line statement need no re-indent inside
	// brackets; a backslash continuation does.
	if bytes.Contains(src[s:End(stmt)], []byte("\\\n")) {
		return nil, false
	}
	return edits, true
}

// Paren wraps text in parentheses unless n's parent is a context where a
// low-precedence expression ("a and b", "a if c else b") needs none.
func Paren(n *ts.Node, text string, conditional bool) string {
	par := n.Parent()
	if par == nil {
		return "(" + text + ")"
	}
	switch par.Type() {
	case "expression_statement", "assignment", "return_statement", "keyword_argument", "argument_list",
		"parenthesized_expression", "list", "tuple", "set", "pair", "assert_statement", "augmented_assignment":
		return text
	case "if_statement", "elif_clause", "while_statement":
		if c := par.ChildByFieldName("condition"); c != nil && c.Equal(n) {
			return text
		}
	case "boolean_operator", "conditional_expression":
		if !conditional && par.Type() == "boolean_operator" {
			return text
		}
		if !conditional && par.Type() == "conditional_expression" {
			return text
		}
	}
	return "(" + text + ")"
}
