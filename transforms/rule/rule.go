// Package rule defines what a rewrite rule is — one value with a code, a name,
// a doc, a fix safety level and a Run function — and the engine that runs rules
// over a Python file, merges their byte-range edits, and refuses any result that
// parses worse than its input.
//
// The shape follows golang.org/x/tools/go/analysis (a rule reports findings
// through its Pass and never writes files) and ruff (every fix has a safety
// level: Safe fixes are applied by default, Unsafe ones only on request,
// DisplayOnly ones never).
package rule

import (
	"context"
	"fmt"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// Target is what the rewritten code should run on.
type Target string

const (
	// Portable code uses torch.accelerator and still runs on CUDA and CPU.
	Portable Target = "portable"
	// TPU code names the TorchTPU device literally.
	TPU Target = "tpu"
)

// Targets lists every target in a stable order.
var Targets = []Target{Portable, TPU}

// ParseTarget parses a --target value.
func ParseTarget(s string) (Target, error) {
	switch Target(s) {
	case Portable, TPU:
		return Target(s), nil
	}
	return "", fmt.Errorf("unknown target %q (want portable or tpu)", s)
}

// Safety is how far a fix may be trusted (ruff's Applicability).
type Safety int

const (
	// Safe fixes keep meaning and comments; applied by default.
	Safe Safety = iota
	// Unsafe fixes are valid but may change behaviour; applied with --unsafe-fixes.
	Unsafe
	// DisplayOnly findings are reported (and marked with --mark), never fixed.
	DisplayOnly
)

func (s Safety) String() string {
	switch s {
	case Safe:
		return "safe"
	case Unsafe:
		return "unsafe"
	case DisplayOnly:
		return "diagnostic"
	}
	return fmt.Sprintf("safety(%d)", int(s))
}

// MarshalText renders the safety level for reports.
func (s Safety) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Example is a rule's before/after documentation, also run as a test.
type Example struct {
	Before   string
	Portable string // expected output for the portable target ("" = unchanged)
	TPU      string // expected output for the tpu target ("" = unchanged)
}

// Rule is one rewrite or diagnostic rule.
type Rule struct {
	Code    string // family prefix plus three digits, e.g. PDV001; stable forever
	Name    string // kebab-case, stable
	Family  string // e.g. "device", "cuda-api", "amp"
	Safety  Safety // the level of the fix the rule offers (DisplayOnly: none)
	Doc     string // Markdown: first line is the title; sections "## What it does", "## Why", "## Fix safety"
	Example Example
	Removed bool // retired codes stay registered
	// OptIn marks a suggestion rather than a migration step (PCM002): its
	// findings left unapplied are not work for a human in the effort
	// estimate (the report lists them apart).
	OptIn bool
	// Needles, when set, are byte strings of which at least one occurs in
	// every file the rule can report on (e.g. "cuda", "device_map"). The
	// driver skips the rule — and the parse, when no rule is left — for a file
	// that contains none of them. Leave nil when unsure: nil means "always run".
	Needles []string
	// Paths, when set, says on which files (by their path, slash-separated
	// and relative to the root) the rule can report: the engine runs it on
	// no other file, and the driver skips it there before parsing. Set it
	// only where Run itself reports nothing on the other paths (so the
	// results are the same); nil means every path.
	Paths func(path string) bool
	// Run inspects p.Tree and calls p.Report. It must not panic on code it does
	// not understand; it reports or skips.
	Run func(p *Pass)
}

// Title is the first line of Doc.
func (r *Rule) Title() string {
	t, _, _ := strings.Cut(strings.TrimSpace(r.Doc), "\n")
	return strings.TrimSpace(strings.TrimLeft(t, "# "))
}

// Edit replaces Src[Start:End] with New. An insertion has Start == End.
type Edit struct {
	Start, End int
	New        string
}

// Prelude is a module-level definition a fix needs, inserted once after the
// module's imports. Text is the exact block; if the module already contains
// it (or a line starting with Marker), nothing is inserted. Imports are import
// lines ("import torch") the block relies on, added when missing.
type Prelude struct {
	Key    string // dedupe key, also the sort key among preludes
	Text   string // the lines to insert, newline-terminated
	Marker string // a prefix that proves the prelude is already there
	// Also are other texts that prove it is there: what earlier versions
	// inserted for it.
	Also    []string
	Imports []string
	// Share, when set, is the one name Text defines, and Text may be shared:
	// in a file of a package (Layout.Package set) it goes to the package's
	// helper module (HelperModule) and the file imports Share from there;
	// elsewhere Text is inserted as usual.
	Share string
	// From is the module prefix Share is imported from ("..", or "pkg."
	// for an absolute import: kit.HelperFrom); "" means Layout.Package.
	From string
	// Helper is the path of the helper module From names when it is not
	// the file's own package's (a loose script importing timm's).
	Helper string
}

// HelperModule is the module name of a package's shared helper definitions
// (see Prelude.Share); the file sits next to the package's top __init__.py.
const HelperModule = "_pallasify_device"

// Layout is where a file sits in its tree, as the driver knows it. The zero
// value (no tree known: a single file, a notebook, a rule's example) places
// every definition in the file at module level.
type Layout struct {
	// Tree is set when the driver walked a tree and knows the file's place:
	// the device rules may then treat a library module (a file that is not
	// an entry script) lazily (kit.Library).
	Tree bool
	// Package is the relative import prefix of the package's helper module
	// ("." for a file next to the top __init__.py, ".." one level below),
	// or "" when the file is in no package (shared definitions stay inline).
	Package string
	// Tops are the packages of the tree whose helper module the file may
	// import by absolute name, where it imports one of their modules by that
	// name already (kit.HelperFrom): for a file in a package its top package
	// (under each name it may be imported by), for a file in no package
	// (a loose script, a test) every top package of the tree.
	Tops []Top
}

// Top is one name a top package of the tree may be imported by.
type Top struct {
	Name   string // dotted: "dinov2", "src.pkg", "pkg"
	Helper string // the path of its helper module, relative to the tree
	// Has reports whether a module or directory of that name is right
	// under the package: an import of <Name>.<child> is then one of the
	// tree's, not of another distribution that has the same name.
	Has func(child string) bool
}

// Shared is one definition a file needs from its package's helper module.
type Shared struct {
	Key     string // the prelude's key, the sort key in the helper module
	Name    string // the name it defines
	Text    string
	Imports []string // import lines the definition relies on
	// Helper is the helper module's path when the file imports it by
	// absolute name (Prelude.Helper); "" means the file's own package's.
	Helper string
}

// Fix is one suggested change: an imperative title, a safety level and edits
// that are applied together or not at all.
type Fix struct {
	Title    string
	Safety   Safety
	Edits    []Edit
	Preludes []Prelude
	Imports  []string // import lines the new text relies on, added when missing
}

// Finding is what a rule reports.
type Finding struct {
	Code    string
	Rule    string // rule name
	Start   int
	End     int
	Line    int // 1-based, filled by the engine
	Col     int // 1-based byte column, filled by the engine
	Message string
	Fix     *Fix // nil for diagnostic-only findings
	Applied bool // set by the engine when the fix was written (or Within's was)
	// Within is the code of the applied fix that replaced this site's text
	// as a whole (its own fix, inside that text, is not written).
	Within  string
	Skipped string // why a fix was not applied (overlap, unsafe, ...)
}

// Pass is everything a rule sees of one file.
type Pass struct {
	Path    string
	Src     []byte
	Tree    *ts.Tree
	Target  Target
	Layout  Layout
	Imports *Imports
	rule    *Rule
	out     *[]Finding
	memo    map[string]any // shared by every rule's Pass over the same tree
	ctx     context.Context
}

// Cancelled reports whether the run was cancelled (or the file's time is
// up). A rule's own loop over the tree checks it every few hundred nodes
// and returns when it is true; kit's walks do. The engine then drops the
// rule's partial findings and stops.
func (p *Pass) Cancelled() bool { return p.ctx != nil && p.ctx.Err() != nil }

// Memo returns the value computed by f for key, computing it once per file:
// every rule's Pass over the same tree shares the results, so facts several
// rules need (which models would be compiled, ...) are derived once.
// Values must depend only on the file and target, never on the running rule.
func (p *Pass) Memo(key string, f func() any) any {
	if p.memo == nil {
		return f()
	}
	if v, ok := p.memo[key]; ok {
		return v
	}
	v := f()
	p.memo[key] = v
	return v
}

// Report records a finding for the running rule.
func (p *Pass) Report(f Finding) {
	if f.Code == "" {
		f.Code = p.rule.Code
	}
	f.Rule = p.rule.Name
	if f.Fix != nil && f.Fix.Safety < p.rule.Safety {
		// A fix may be less safe than its rule's default, never more.
		f.Fix.Safety = p.rule.Safety
	}
	*p.out = append(*p.out, f)
}

// Text returns the source of n.
func (p *Pass) Text(n *ts.Node) string { return ts.Text(n, p.Src) }

// Dotted returns the text of an identifier or a chain of attribute accesses
// made only of identifiers ("torch.cuda.amp.autocast"), or "" for anything
// else (and for nil). A node of the tree's flattened copy is read there,
// without calls into C.
//
// The chain is walked in a loop, not a recursion, and each chain's name is
// built once per file (dottedNames): Dotted of every link of a chain n
// long costs n, not n² (a 200,000-long `torch.a.a…a.cuda()` took minutes).
func (p *Pass) Dotted(n *ts.Node) string {
	if n == nil {
		return ""
	}
	if f := p.flat(); f != nil {
		if i := f.IndexOf(n); i >= 0 {
			return p.dottedAt(f, i)
		}
	}
	// A node from outside the flattened copy: walk down its chain.
	var attrs []string
	for n != nil && n.Type() == "attribute" {
		attrs = append(attrs, p.Text(n.ChildByFieldName("attribute")))
		n = n.ChildByFieldName("object")
	}
	if n == nil || n.Type() != "identifier" {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.Text(n))
	for k := len(attrs) - 1; k >= 0; k-- {
		b.WriteString(".")
		b.WriteString(attrs[k])
	}
	return b.String()
}

// dottedNames holds the Dotted name of every flattened node asked about,
// and of every other link of its chain: each link's name is a prefix of
// the whole chain's, so the chain's name is built once and the links share
// its memory.
type dottedNames map[int]string

// dottedAt is Dotted of the flattened tree's node i.
func (p *Pass) dottedAt(f *ts.Flat, i int) string {
	switch f.Types[i] {
	case "identifier":
		s, e := f.Range(i)
		return string(p.Src[s:e])
	case "attribute":
	default:
		return ""
	}
	memo, _ := p.Memo("rule.dotted", func() any { return dottedNames{} }).(dottedNames)
	if name, ok := memo[i]; ok {
		return name
	}
	// Up to the chain's top: the outermost attribute whose object links
	// down to i.
	top := i
	for {
		par := f.Parent(top)
		if par < 0 || f.Types[par] != "attribute" || f.Child(par, "object") != top {
			break
		}
		top = par
	}
	// Down to its base, then the name, built once.
	var links []int // the chain's attributes, top first
	base := top
	for f.Types[base] == "attribute" {
		links = append(links, base)
		if base = f.Child(base, "object"); base < 0 {
			break
		}
	}
	name := ""
	var ends []int // ends[k]: the length of links[k]'s name
	if base >= 0 && f.Types[base] == "identifier" {
		var b strings.Builder
		s, e := f.Range(base)
		b.Write(p.Src[s:e])
		ends = make([]int, len(links))
		for k := len(links) - 1; k >= 0; k-- {
			b.WriteByte('.')
			if a := f.Child(links[k], "attribute"); a >= 0 {
				s, e := f.Range(a)
				b.Write(p.Src[s:e])
			}
			ends[k] = b.Len()
		}
		name = b.String()
	}
	for k, l := range links {
		if name == "" {
			if memo != nil {
				memo[l] = ""
			}
			continue
		}
		if memo != nil {
			memo[l] = name[:ends[k]]
		}
	}
	if name == "" {
		return ""
	}
	for k, l := range links {
		if l == i {
			return name[:ends[k]]
		}
	}
	return "" // not reached: i is a link of its own chain
}

// Field is n.ChildByFieldName(field), read from the tree's flattened copy
// when n is one of its nodes (an Equal node, not the same pointer as
// ChildByFieldName's).
func (p *Pass) Field(n *ts.Node, field string) *ts.Node {
	if f := p.flat(); f != nil {
		if i := f.IndexOf(n); i >= 0 {
			if c := f.Child(i, field); c >= 0 {
				return f.Nodes[c]
			}
			return nil
		}
	}
	return n.ChildByFieldName(field)
}

// Parent is n.Parent(), read from the tree's flattened copy when n is one
// of its nodes (an Equal node, not the same pointer as Parent's): no walk
// down from the root in C.
func (p *Pass) Parent(n *ts.Node) *ts.Node {
	if f := p.flat(); f != nil {
		if i := f.IndexOf(n); i >= 0 {
			if par := f.Parent(i); par >= 0 {
				return f.Nodes[par]
			}
			return nil
		}
	}
	return n.Parent()
}

// flat is the tree's flattened copy, nil without a tree.
func (p *Pass) flat() *ts.Flat {
	if p.Tree == nil {
		return nil
	}
	return p.Tree.Flat()
}

// Rule returns the running rule.
func (p *Pass) Rule() *Rule { return p.rule }
