package rule

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// Engine codes for problems the engine itself reports.
const (
	// CodeSyntaxError: the input does not parse; the file is left untouched.
	CodeSyntaxError = "PIO001"
	// CodeRefused: the rewrite would parse worse than the input; not written.
	CodeRefused = "PIO010"
	// CodeRulePanic: a rule failed on this file; its findings are dropped.
	CodeRulePanic = "PIO900"
	// CodeOverBudget: the file is over a per-file limit (Limits, or the
	// driver's time budget); it is left untouched, the run goes on.
	CodeOverBudget = "PIO012"
)

// Default per-file limits (Limits).
const (
	// DefaultMaxDepth is the deepest syntax tree the rules run on. CPython
	// does not compile code nested a few thousand deep (RecursionError
	// "during compilation" for a 3,000-long attribute chain or sum), so no
	// program that runs comes near it.
	DefaultMaxDepth = 5000
	// DefaultMaxNodes is the most syntax tree nodes the rules run on:
	// about 4 MB of dense Python; each node costs the rules' copy of the
	// tree (ts.Flat) about 150 bytes.
	DefaultMaxNodes = 2 << 20
)

// Limits bound the work on one file. A file over one is reported
// (CodeOverBudget) and left untouched. Zero fields take the defaults; a
// negative one is no limit.
type Limits struct {
	MaxDepth int // nesting of the syntax tree (the root alone: 1)
	MaxNodes int // syntax tree nodes, named or not
}

func (l Limits) orDefaults() Limits {
	if l.MaxDepth == 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNodes == 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	return l
}

// check returns the finding for a tree over l, or nil.
func (l Limits) check(tree *ts.Tree) *Finding {
	l = l.orDefaults()
	nodes, depth := tree.Measure()
	var msg string
	switch {
	case l.MaxDepth > 0 && depth > l.MaxDepth:
		msg = fmt.Sprintf("the syntax tree nests %d deep, over the limit of %d (CPython does not compile code nested this deep); file left untouched", depth, l.MaxDepth)
	case l.MaxNodes > 0 && nodes > l.MaxNodes:
		msg = fmt.Sprintf("the syntax tree has %d nodes, over the limit of %d; file left untouched", nodes, l.MaxNodes)
	default:
		return nil
	}
	return &Finding{Code: CodeOverBudget, Rule: "over-budget", Line: 1, Col: 1, Message: msg}
}

// Options select what the engine applies.
type Options struct {
	Target      Target
	UnsafeFixes bool // also apply Unsafe fixes
	Mark        bool // insert a "# pallasify: CODE ..." comment above DisplayOnly findings
	Layout      Layout
	Limits      Limits
	// LineLength, when positive, is the repository's line limit: a line an
	// edit touched that grows past it is wrapped (wrap.go). Zero: no
	// wrapping (a rule's example, a caller that knows no repository).
	LineLength int
}

// Engine runs a fixed list of rules over files.
type Engine struct {
	Rules []*Rule
	Opts  Options
	// Inspect, when set, is called with the parse of the input before the
	// rules run (a file with syntax errors included), so a caller that
	// reads the same file gets its tree without parsing it again. It must
	// not keep the tree, whose Flat and Index the rules then share.
	Inspect func(*ts.Tree)
}

// Result is the outcome for one file.
type Result struct {
	// Output is the rewritten source, or nil when nothing changed (or the
	// rewrite was refused).
	Output   []byte
	Findings []Finding // sorted by position, then rule order
	// Problems are engine diagnostics (syntax error, refused rewrite, rule
	// failure), reported with the same Finding shape.
	Problems    []Finding
	InputErrors int
	// Shared are the definitions the output imports from its package's
	// helper module (Layout.Package), which the driver must write.
	Shared []Shared
}

// Changed reports whether the file would be rewritten.
func (r *Result) Changed() bool { return r.Output != nil }

// Run applies the engine's rules to src. It stops when ctx ends, inside a
// rule's walk of the tree too, and returns an error wrapping ctx.Err().
// A file over the limits (Options.Limits) is reported and left untouched.
func (e *Engine) Run(ctx context.Context, p *ts.Parser, path string, src []byte) (*Result, error) {
	tree, err := p.Parse(ctx, src)
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	if f := e.Opts.Limits.check(tree); f != nil {
		return &Result{Problems: []Finding{*f}}, nil
	}
	if e.Inspect != nil {
		e.Inspect(tree)
	}
	res := &Result{InputErrors: tree.ErrorCount()}
	if res.InputErrors > 0 {
		n := tree.FirstError()
		f := Finding{Code: CodeSyntaxError, Rule: "syntax-error", Message: "file does not parse as Python; left untouched"}
		if n != nil {
			f.Start, f.End = int(n.StartByte()), int(n.EndByte())
		}
		newLineIndex(src).fill(&f)
		f.Message = fmt.Sprintf("syntax error at line %d; file left untouched", f.Line)
		res.Problems = append(res.Problems, f)
		return res, nil
	}
	im := CollectImports(tree)
	order := map[string]int{}
	memo := map[string]any{}
	for i, r := range e.Rules {
		order[r.Code] = i
		if r.Paths != nil && !r.Paths(path) {
			continue
		}
		var got []Finding
		pass := &Pass{Path: path, Src: src, Tree: tree, Target: e.Opts.Target, Layout: e.Opts.Layout, Imports: im, rule: r, out: &got,
			memo: memo, ctx: ctx}
		perr := runRule(r, pass)
		if err := ctx.Err(); err != nil {
			// The rule's walk stopped early (Pass.Cancelled): its
			// findings are partial.
			return nil, fmt.Errorf("rules on %s: %w", path, err)
		}
		if perr != nil {
			res.Problems = append(res.Problems, Finding{Code: CodeRulePanic, Rule: r.Name, Line: 1, Col: 1,
				Message: fmt.Sprintf("rule %s (%s) failed on this file and was skipped: %v", r.Code, r.Name, perr)})
			continue
		}
		res.Findings = append(res.Findings, got...)
	}
	lines := newLineIndex(src)
	for i := range res.Findings {
		lines.fill(&res.Findings[i])
	}
	sort.SliceStable(res.Findings, func(i, j int) bool {
		a, b := res.Findings[i], res.Findings[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if order[a.Code] != order[b.Code] {
			return order[a.Code] < order[b.Code]
		}
		return a.End < b.End
	})
	out, problem, err := e.apply(ctx, p, tree, im, res)
	if err != nil {
		return nil, err
	}
	if problem != nil {
		res.Shared = nil
		res.Problems = append(res.Problems, *problem)
		for i := range res.Findings {
			res.Findings[i].Applied = false
		}
		return res, nil
	}
	if out != nil && !bytes.Equal(out, src) {
		res.Output = out
	}
	return res, nil
}

func runRule(r *Rule, p *Pass) (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("panic: %v", x)
		}
	}()
	r.Run(p)
	return nil
}

type placed struct {
	Edit
	seq int
}

// apply merges the accepted edits, adds imports, preludes and markers, and
// checks that the result parses at least as well as the input (tree, the
// input's parse, is reused for the unchanged parts: ts.Parser.Reparse).
func (e *Engine) apply(ctx context.Context, p *ts.Parser, input *ts.Tree, im *Imports, res *Result) ([]byte, *Finding, error) {
	src := input.Src
	var accepted []placed
	var taken spans // accepted's ranges, sorted: the overlap test
	var imports []string
	preludes := map[string]Prelude{}
	shared := map[string]bool{}
	var needs []string // the imports the inserted preludes rely on
	res.Shared = nil
	seq := 0
	owner := map[int]string{}
	markers := map[int][]string{} // line start -> marker lines
	for i := range res.Findings {
		if i%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("apply fixes: %w", err)
			}
		}
		f := &res.Findings[i]
		if f.Fix == nil || f.Fix.Safety == DisplayOnly {
			if e.Opts.Mark {
				ls := lineStart(src, markAt(input.Root(), f.Start))
				if !markedAbove(src, input.Root(), f.Start, f.Code) {
					markers[ls] = appendUnique(markers[ls], fmt.Sprintf("# pallasify: %s %s", f.Code, oneLine(f.Message)))
				}
			}
			continue
		}
		if f.Fix.Safety == Unsafe && !e.Opts.UnsafeFixes {
			f.Skipped = "unsafe fix; pass --unsafe-fixes to apply"
			continue
		}
		if owner, ok := taken.covers(f.Fix.Edits, owner); ok {
			// Every edit lies inside text an accepted fix replaced (the
			// device-selection idiom's DEVICE over its torch.cuda check):
			// the site is gone with that text, resolved by that fix.
			f.Applied, f.Within = true, owner
			continue
		}
		conflict := false
		for _, ed := range f.Fix.Edits {
			if ed.Start < 0 || ed.End > len(src) || ed.Start > ed.End {
				conflict = true
				f.Skipped = "fix has an edit outside the file"
				break
			}
			if s, bad := taken.overlap(ed.Start, ed.End); bad {
				conflict = true
				f.Skipped = "overlaps a fix of " + owner[s]
				break
			}
		}
		if !conflict && selfOverlap(f.Fix.Edits) {
			conflict = true
			f.Skipped = "fix has overlapping edits"
		}
		if conflict {
			continue
		}
		for _, ed := range f.Fix.Edits {
			seq++
			accepted = append(accepted, placed{apart(src, ed), seq})
			taken.add(ed.Start, ed.End, seq)
			owner[seq] = f.Code
		}
		f.Applied = true
		imports = append(imports, f.Fix.Imports...)
		for _, pr := range f.Fix.Preludes {
			from := pr.From
			if from == "" {
				from = e.Opts.Layout.Package
			}
			if pr.Share != "" && from != "" {
				// A shared definition: imported from the package's helper
				// module when the file's new text names it, in the edits or
				// in a definition the file keeps (an entry script's
				// `DEVICE = pallasify_device()`); device_at needs
				// pallasify_device in the helper module, not in the file.
				if usesName(f.Fix.Edits, pr.Share) || keptUses(f.Fix.Preludes, e.Opts.Layout.Package, pr.Share) {
					imports = append(imports, "from "+from+HelperModule+" import "+pr.Share)
				}
				if !shared[pr.Share] {
					shared[pr.Share] = true
					res.Shared = append(res.Shared, Shared{Key: pr.Key, Name: pr.Share, Text: pr.Text, Imports: pr.Imports,
						Helper: pr.Helper})
				}
				continue
			}
			if _, ok := preludes[pr.Key]; !ok {
				preludes[pr.Key] = pr
			}
			imports = append(imports, pr.Imports...)
			needs = append(needs, pr.Imports...)
		}
	}
	for ls, lines := range markers {
		indent := leadingSpace(src, ls)
		var b strings.Builder
		for _, l := range lines {
			for _, w := range markerLines(indent, l, e.Opts.LineLength) {
				b.WriteString(w + "\n")
			}
		}
		seq++
		accepted = append(accepted, placed{Edit{Start: ls, End: ls, New: b.String()}, seq})
	}
	anchor := headerAt(im, needs)
	if header := headerBlock(src, im, anchor, imports, preludes); header != "" {
		at := anchor
		if at < 0 {
			at = im.BodyStart
		}
		// First among insertions at its offset: a marker there (a file
		// that starts with code) belongs right above its line, below the
		// header, or the next run would mark the line again.
		accepted = append(accepted, placed{Edit{Start: at, End: at, New: header}, 0})
	}
	if len(accepted) == 0 {
		return nil, nil, nil
	}
	sort.SliceStable(accepted, func(i, j int) bool {
		a, b := accepted[i], accepted[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		ai, bi := a.Start == a.End, b.Start == b.End
		if ai != bi {
			return ai // insertions before a replacement at the same offset
		}
		return a.seq < b.seq
	})
	var out bytes.Buffer
	out.Grow(len(src) + 256)
	pos := 0
	changes := make([]ts.Change, 0, len(accepted))
	touches := make([]touch, 0, len(accepted))
	for _, a := range accepted {
		out.Write(src[pos:a.Start])
		touches = append(touches, touch{o: out.Len(), oe: out.Len() + len(a.New), s: a.Start, e: a.End})
		out.WriteString(a.New)
		pos = a.End
		changes = append(changes, ts.Change{Start: a.Start, End: a.End, NewLen: len(a.New)})
	}
	out.Write(src[pos:])
	result := out.Bytes()
	// What removals leave behind (tidy.go): dead `pass` blocks, orphaned
	// comments, doubled blank lines.
	tidied, moved, changed, err := tidy(ctx, p, src, result, touches)
	if err != nil && ctx.Err() != nil {
		return nil, nil, fmt.Errorf("tidy the rewrite: %w", err)
	}
	if err == nil && changed {
		result, touches = tidied, moved
	}
	if e.Opts.LineLength > 0 {
		if wrapped := wrapTouched(src, result, touches, e.Opts.LineLength); wrapped != nil {
			// The printer only moves tokens between lines inside
			// brackets; a wrapped text that parsed worse would be its
			// bug, and the unwrapped one is written instead.
			if tree, err := p.Parse(ctx, wrapped); err == nil {
				ok := tree.ErrorCount() <= res.InputErrors
				tree.Close()
				if ok {
					return wrapped, nil, nil
				}
			} else if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("parse the rewrite: %w", err)
			}
		}
	}
	var tree *ts.Tree
	if changed {
		tree, err = p.Parse(ctx, result)
	} else {
		tree, err = p.Reparse(ctx, input, changes, result)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("parse the rewrite: %w", err)
		}
		f := Finding{Code: CodeRefused, Rule: "refused-rewrite", Line: 1, Col: 1, Message: "rewrite not written: " + err.Error()}
		return nil, &f, nil
	}
	defer tree.Close()
	if n := tree.ErrorCount(); n > res.InputErrors {
		f := Finding{Code: CodeRefused, Rule: "refused-rewrite", Line: 1, Col: 1}
		if en := tree.FirstError(); en != nil {
			f.Line = int(en.StartPoint().Row) + 1
		}
		f.Message = fmt.Sprintf("the rewrite would not parse (error near output line %d); file left unchanged", f.Line)
		return nil, &f, nil
	}
	return result, nil, nil
}

// selfOverlap reports whether two edits of one fix overlap (with the same
// rules as between fixes); applying such a fix would scramble the output.
func selfOverlap(edits []Edit) bool {
	for i, x := range edits {
		for _, a := range edits[:i] {
			if x.Start < a.End && a.Start < x.End ||
				x.Start == x.End && a.Start < x.Start && x.Start < a.End ||
				a.Start == a.End && x.Start < a.Start && a.Start < x.End {
				return true
			}
		}
	}
	return false
}

// headerAt is where the header goes: after the last top-level import, or,
// when code runs between the leading import block and a later import (a
// module that imports asyncio at its end, after module-level code that may
// use DEVICE), after the leading block — provided every import the
// preludes rely on (needs) and the header does not add itself is bound
// there. The fixes' own new text stands where the original code was.
func headerAt(im *Imports, needs []string) int {
	if im.LeadEnd < 0 || im.LeadEnd >= im.LastTopLevel {
		return im.LastTopLevel
	}
	for _, l := range needs {
		l = strings.TrimSpace(l)
		if l == "" || !(im.Lines[l] || importSatisfied(im, l)) {
			continue // added by the header itself
		}
		if name := localName(l); name == "" || !im.LeadNames[name] {
			return im.LastTopLevel
		}
	}
	return im.LeadEnd
}

// localName is the name a one-name import line binds ("import torch.nn" ->
// "torch", "from m import x as y" -> "y"), or "".
func localName(line string) string {
	if rest, ok := strings.CutPrefix(line, "import "); ok && !strings.Contains(rest, ",") {
		mod, alias, hasAlias := strings.Cut(rest, " as ")
		if hasAlias {
			return strings.TrimSpace(alias)
		}
		head, _, _ := strings.Cut(strings.TrimSpace(mod), ".")
		return head
	}
	if rest, ok := strings.CutPrefix(line, "from "); ok {
		_, names, ok := strings.Cut(rest, " import ")
		if !ok || strings.Contains(names, ",") {
			return ""
		}
		name, alias, hasAlias := strings.Cut(names, " as ")
		if hasAlias {
			return strings.TrimSpace(alias)
		}
		return strings.TrimSpace(name)
	}
	return ""
}

// headerBlock returns the import lines and preludes to insert after the
// imports, or "" when everything needed is already present.
func headerBlock(src []byte, im *Imports, anchor int, imports []string, preludes map[string]Prelude) string {
	var missing []string
	seen := map[string]bool{}
	for _, l := range imports {
		l = strings.TrimSpace(l)
		if l == "" || seen[l] || im.Lines[l] || importSatisfied(im, l) {
			continue
		}
		seen[l] = true
		missing = append(missing, l)
	}
	missing = mergeHelperImports(missing)
	keys := make([]string, 0, len(preludes))
	for k := range preludes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var blocks []string
	for _, k := range keys {
		pr := preludes[k]
		if bytes.Contains(src, []byte(strings.TrimSpace(pr.Text))) || (pr.Marker != "" && hasLinePrefix(src, pr.Marker)) ||
			slices.ContainsFunc(pr.Also, func(a string) bool { return bytes.Contains(src, []byte(a)) }) {
			continue
		}
		blocks = append(blocks, strings.TrimRight(pr.Text, "\n")+"\n")
	}
	if len(missing) == 0 && len(blocks) == 0 {
		return ""
	}
	var b strings.Builder
	for _, l := range missing {
		b.WriteString(l + "\n")
	}
	// PEP 8: two blank lines around a block that defines a function or class.
	for i, bl := range blocks {
		switch {
		case i > 0 && (definesTopLevel(bl) || definesTopLevel(blocks[i-1])):
			b.WriteString("\n\n")
		case i > 0:
			b.WriteString("\n")
		case anchor >= 0 || len(missing) > 0:
			b.WriteString("\n")
			if definesTopLevel(bl) {
				b.WriteString("\n")
			}
		}
		b.WriteString(bl)
	}
	at := anchor
	if at < 0 {
		at = im.BodyStart
		b.WriteString("\n")
	}
	if len(blocks) > 0 && definesTopLevel(blocks[len(blocks)-1]) {
		for n := blankLinesAt(src, at) + boolInt(anchor < 0); n < 2 && at < len(src); n++ {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// apart keeps an edit's new text from gluing onto a neighbouring token: a
// string literal replaced by a name in `"cuda"else` would read `DEVICE.typeelse`.
// Where the edit's boundary was a token boundary in src and both sides are
// identifier characters now, a space is added.
func apart(src []byte, e Edit) Edit {
	if e.New == "" {
		return e
	}
	if e.End < len(src) && isIdentByte(src[e.End]) && isIdentByte(e.New[len(e.New)-1]) &&
		(e.End == 0 || !isIdentByte(src[e.End-1]) || e.Start == e.End) {
		e.New += " "
	}
	if e.Start > 0 && isIdentByte(src[e.Start-1]) && isIdentByte(e.New[0]) &&
		(e.Start >= len(src) || !isIdentByte(src[e.Start]) || e.Start == e.End) {
		e.New = " " + e.New
	}
	return e
}

// keptUses reports whether a prelude of preludes that stays in the file
// (not shared) names the identifier name.
func keptUses(preludes []Prelude, pkg, name string) bool {
	for _, pr := range preludes {
		if pr.Share != "" && (pr.From != "" || pkg != "") {
			continue
		}
		if usesName([]Edit{{New: pr.Text}}, name) {
			return true
		}
	}
	return false
}

// usesName reports whether the new text of edits names the identifier name.
func usesName(edits []Edit, name string) bool {
	for _, e := range edits {
		for t := e.New; ; {
			i := strings.Index(t, name)
			if i < 0 {
				break
			}
			before := i == 0 || !isIdentByte(t[i-1])
			after := i+len(name) == len(t) || !isIdentByte(t[i+len(name)])
			if before && after {
				return true
			}
			t = t[i+len(name):]
		}
	}
	return false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// mergeHelperImports joins the from-imports of the helper module (see
// Prelude.Share) into one line, at the place of the first, names sorted.
func mergeHelperImports(lines []string) []string {
	var out []string
	var names []string
	at, prefix := -1, ""
	for _, l := range lines {
		head, name, ok := strings.Cut(l, " import ")
		if ok && strings.HasPrefix(head, "from ") && strings.HasSuffix(head, HelperModule) && !strings.Contains(name, ",") {
			if at < 0 {
				at, prefix = len(out), head+" import "
				out = append(out, "")
			}
			if head+" import " == prefix {
				names = append(names, name)
				continue
			}
		}
		out = append(out, l)
	}
	if at >= 0 {
		sort.Strings(names)
		out[at] = prefix + strings.Join(names, ", ")
	}
	return out
}

// definesTopLevel reports whether a prelude block defines a function or a
// class (its first line that is not a comment starts with def, class or @).
func definesTopLevel(block string) bool {
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			continue
		}
		return strings.HasPrefix(l, "def ") || strings.HasPrefix(l, "class ") || strings.HasPrefix(l, "@") ||
			strings.HasPrefix(l, "async def ")
	}
	return false
}

// blankLinesAt counts the blank lines starting at offset at; the end of the
// file counts as enough.
func blankLinesAt(src []byte, at int) int {
	n := 0
	for at < len(src) {
		e := bytes.IndexByte(src[at:], '\n')
		if e < 0 || strings.TrimSpace(string(src[at:at+e])) != "" {
			return n
		}
		n++
		at += e + 1
	}
	return 2
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// importSatisfied reports whether "import x" or "from m import n" is already
// in effect under the same local name.
func importSatisfied(im *Imports, line string) bool {
	if rest, ok := strings.CutPrefix(line, "import "); ok && !strings.Contains(rest, ",") {
		mod, alias, hasAlias := strings.Cut(rest, " as ")
		mod, alias = strings.TrimSpace(mod), strings.TrimSpace(alias)
		if !hasAlias {
			head, _, _ := strings.Cut(mod, ".")
			return im.Modules[head] == head
		}
		return im.Modules[alias] == mod
	}
	if rest, ok := strings.CutPrefix(line, "from "); ok {
		mod, names, ok := strings.Cut(rest, " import ")
		if !ok || strings.Contains(names, ",") {
			return false
		}
		name, alias, hasAlias := strings.Cut(names, " as ")
		name, alias = strings.TrimSpace(name), strings.TrimSpace(alias)
		if !hasAlias {
			alias = name
		}
		return im.Names[alias] == strings.TrimSpace(mod)+"."+name
	}
	return false
}

func hasLinePrefix(src []byte, prefix string) bool {
	for _, l := range bytes.Split(src, []byte("\n")) {
		if bytes.HasPrefix(l, []byte(prefix)) {
			return true
		}
	}
	return false
}

// markAt is where the --mark comment of a finding at offset at goes: the
// start of the innermost statement (or elif/else/except/finally/case clause)
// holding it, so that it stays right above its line when the line printer
// spreads the statement over several lines (a second pass would otherwise
// find the site on a line of its own, unmarked, and mark it again); at
// itself where no statement holds it.
func markAt(root *ts.Node, at int) int {
	stmt := -1
	for n := root; n != nil; {
		var next *ts.Node
		for i := 0; i < int(n.NamedChildCount()); i++ {
			c := n.NamedChild(i)
			if int(c.StartByte()) <= at && at < int(c.EndByte()) {
				next = c
				break
			}
		}
		if next == nil {
			break
		}
		switch {
		case n.Type() == "module" || n.Type() == "block":
			stmt = int(next.StartByte())
		case strings.HasSuffix(next.Type(), "_clause") && next.Type() != "for_in_clause" && next.Type() != "if_clause":
			// elif_clause, else_clause, except_clause, finally_clause, case_clause
			stmt = int(next.StartByte())
		}
		n = next
	}
	if stmt < 0 {
		return at
	}
	return stmt
}

// markedAbove reports whether the statement a finding at `at` is marked on
// carries a mark of code, or a statement it opens the body of does: a fix of
// another rule may wrap the marked statement in a block (`if DEVICE.type ==
// "cuda":` around a set_device), and the second pass then finds the site as
// the first statement of that block, under the mark the first pass wrote
// above the whole.
func markedAbove(src []byte, root *ts.Node, at int, code string) bool {
	var chain []*ts.Node // statements from the outermost to the site's own
	for n := root; n != nil; {
		var next *ts.Node
		for i := 0; i < int(n.NamedChildCount()); i++ {
			c := n.NamedChild(i)
			if int(c.StartByte()) <= at && at < int(c.EndByte()) {
				next = c
				break
			}
		}
		if next == nil {
			break
		}
		if n.Type() == "module" || n.Type() == "block" {
			chain = append(chain, next)
		}
		n = next
	}
	if len(chain) == 0 {
		return alreadyMarked(src, lineStart(src, markAt(root, at)), code)
	}
	for k := len(chain) - 1; k >= 0; k-- {
		if alreadyMarked(src, lineStart(src, int(chain[k].StartByte())), code) {
			return true
		}
		if k == 0 || !firstInBody(chain[k], chain[k-1]) {
			return false
		}
	}
	return false
}

// firstInBody reports whether stmt is the first statement (comments aside)
// of the first block of outer, the block its header line opens.
func firstInBody(stmt, outer *ts.Node) bool {
	block := stmt.Parent()
	if block == nil || block.Type() != "block" || block.Parent() == nil || !block.Parent().Equal(outer) {
		return false
	}
	for i := 0; i < int(outer.NamedChildCount()); i++ {
		if c := outer.NamedChild(i); c.Type() == "block" {
			if !c.Equal(block) {
				return false
			}
			break
		}
	}
	for i := 0; i < int(block.NamedChildCount()); i++ {
		c := block.NamedChild(i)
		if c.Type() == "comment" {
			continue
		}
		return c.Equal(stmt)
	}
	return false
}

// markerContinuation starts each further line of a --mark comment that
// markerLines wrapped: "#" and three spaces, under its "# pallasify: CODE".
const markerContinuation = "#   "

// markerLines is the --mark comment text ("# pallasify: CODE message") at
// indent, wrapped at words to limit like every other line a rewrite writes
// (the line printer leaves comments alone): the first line keeps "#
// pallasify: CODE" and the message's first word, each further line starts
// with markerContinuation. A word longer than a line stays whole; limit <= 0
// is no limit.
func markerLines(indent, text string, limit int) []string {
	if limit <= 0 || width(indent+text) <= limit {
		return []string{indent + text}
	}
	words := strings.Fields(text)
	const head = 4 // "#", "pallasify:", the code, the message's first word
	if len(words) <= head {
		return []string{indent + text}
	}
	lines := []string{indent + strings.Join(words[:head], " ")}
	for _, w := range words[head:] {
		last := &lines[len(lines)-1]
		if width(*last+" "+w) <= limit {
			*last += " " + w
			continue
		}
		lines = append(lines, indent+markerContinuation+w)
	}
	return lines
}

// alreadyMarked reports whether the block of `# pallasify:` comment lines
// right above the line starting at ls holds a mark of code: a statement can
// carry several marks, and a second --mark pass must find each of them, not
// only the nearest.
func alreadyMarked(src []byte, ls int, code string) bool {
	want := []byte("# pallasify: " + code + " ")
	for ls > 0 {
		prev := lineStart(src, ls-1)
		line := bytes.TrimLeft(src[prev:ls], " \t")
		if bytes.HasPrefix(line, []byte(markerContinuation)) {
			ls = prev // a wrapped mark's further line (markerLines)
			continue
		}
		if !bytes.HasPrefix(line, []byte("# pallasify: ")) {
			return false
		}
		if bytes.HasPrefix(line, want) {
			return true
		}
		ls = prev
	}
	return false
}

func leadingSpace(src []byte, ls int) string {
	i := ls
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return string(src[ls:i])
}

func appendUnique(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// lineIndex maps offsets to lines: the offsets where src's lines start.
// Counting newlines before each finding instead costs the file's length
// per finding (100,000 findings on one line: hours).
type lineIndex struct {
	n      int   // len(src)
	starts []int // starts[i] is line i+1's first byte
}

func newLineIndex(src []byte) lineIndex {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return lineIndex{n: len(src), starts: starts}
}

// fill sets f's Line and Col from Start.
func (x lineIndex) fill(f *Finding) {
	if f.Start > x.n {
		f.Start = x.n
	}
	f.Start = max(f.Start, 0)
	i := sort.SearchInts(x.starts, f.Start+1) - 1 // the last line starting at or before Start
	f.Line = i + 1
	f.Col = 1 + f.Start - x.starts[i]
}

// spans are byte ranges that do not overlap (as accepted fixes' edits do
// not), sorted by start: an overlap test is a binary search, not a scan of
// every accepted edit (100,000 fixes on one line: 10^10 comparisons).
// Sorted by start, their ends are sorted too, insertions (empty ranges)
// included.
type spans struct {
	start, end, seq []int
}

// overlap reports whether [s, e) conflicts with a span: the ranges share a
// byte, or one is an insertion strictly inside the other (both are
// x.Start < a.End && a.Start < x.End). It returns the seq of the first
// conflicting span in source order.
func (x *spans) overlap(s, e int) (int, bool) {
	// The first span that ends after s; every earlier one ends at or
	// before s and cannot conflict, and it starts first of the others.
	i := sort.Search(len(x.end), func(k int) bool { return x.end[k] > s })
	if i < len(x.start) && x.start[i] < e {
		return x.seq[i], true
	}
	return 0, false
}

// covers reports whether every edit lies inside one accepted replacement
// (a span that is not an insertion), and the code of the fix it is part of.
func (x *spans) covers(edits []Edit, owner map[int]string) (string, bool) {
	code := ""
	for _, ed := range edits {
		i := sort.Search(len(x.end), func(k int) bool { return x.end[k] > ed.Start })
		if i >= len(x.start) || x.start[i] >= x.end[i] || x.start[i] > ed.Start || ed.End > x.end[i] {
			return "", false
		}
		if code != "" && code != owner[x.seq[i]] {
			return "", false
		}
		code = owner[x.seq[i]]
	}
	return code, code != ""
}

// add records [s, e), which overlaps no span.
func (x *spans) add(s, e, seq int) {
	i := sort.Search(len(x.start), func(k int) bool {
		return x.start[k] > s || x.start[k] == s && x.end[k] > e
	})
	x.start = slices.Insert(x.start, i, s)
	x.end = slices.Insert(x.end, i, e)
	x.seq = slices.Insert(x.seq, i, seq)
}
