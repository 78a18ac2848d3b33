package rule

import (
	"bytes"
	"context"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// Tidying after removals. A fix that removes a statement deletes its lines
// (or writes `pass` where the statement was the only one of its block, so
// the block stays valid); what that leaves around the removed code is this
// file's: one mechanism for every removing rule, run on the merged output
// before it is wrapped.
//
//   - The comment lines directly above a removed statement (no blank line
//     between) go with it when nothing else is left under them: the next
//     line is blank, the end of the block or the end of the file. A comment
//     separated by a blank line, or one above code that stays, is kept.
//   - The blank lines on both sides of the removed lines are joined as the
//     larger of the two runs, not their sum; none are left right under a
//     block's header or at the end of the file.
//   - A `pass` a fix wrote that is now dead is removed with what it leaves
//     empty: `else: pass` (of an if, a loop or a try) goes; `if cond: pass`
//     with no elif/else goes when its condition has no side effect (names,
//     attributes, literals, comparisons, `and`/`or`/`not`, str methods,
//     isinstance/len: see pureCondition), and so does a last `elif cond:
//     pass`; `try: pass` without else/finally goes with its handlers; a
//     `pass` beside other statements goes. A construct that was the only
//     statement of its block becomes `pass` itself, and is looked at again.
//     `if f(): pass` stays (f may do something), as do `pass` bodies of
//     functions, classes, loops and with statements.
//
// Only text the fixes wrote or removed is touched: a `pass` of the input
// stays, as do blank lines and comments away from a removal.

// tidy returns out with the leftovers of removals cleaned up (see above),
// touches moved to match, and whether anything changed. ctx ends the
// re-parses.
func tidy(ctx context.Context, p *ts.Parser, src, out []byte, touches []touch) ([]byte, []touch, bool, error) {
	changed := false
	// Removals, last first so the earlier offsets stay valid.
	var points []int
	indents := map[int]string{}
	for _, t := range touches {
		if t.o != t.oe || t.s >= t.e || !wholeLines(src, t.s, t.e) || len(bytes.TrimSpace(src[t.s:t.e])) == 0 {
			continue
		}
		if _, ok := indents[t.o]; !ok {
			points = append(points, t.o)
		}
		indents[t.o] = leadingSpace(src, t.s)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(points)))
	for _, at := range points {
		s, e := aroundRemoval(out, at, indents[at], touches)
		if s < e {
			out, touches = cut(out, touches, s, e, "")
			changed = true
		}
	}
	// Only a `pass` a fix wrote is looked at: no parse without one.
	wrote := false
	for _, t := range touches {
		if t.o < t.oe && bytes.Contains(out[t.o:t.oe], []byte("pass")) {
			wrote = true
			break
		}
	}
	for round := 0; wrote && round < 8; round++ {
		tree, err := p.Parse(ctx, out)
		if err != nil {
			return nil, nil, false, err
		}
		s, e, repl, ok := deadPass(tree, out, touches)
		tree.Close()
		if !ok {
			break
		}
		indent := leadingSpace(out, s)
		out, touches = cut(out, touches, s, e, repl)
		changed = true
		if repl == "" {
			if s2, e2 := aroundRemoval(out, s, indent, touches); s2 < e2 {
				out, touches = cut(out, touches, s2, e2, "")
			}
		}
	}
	return out, touches, changed, nil
}

// wholeLines reports whether src[s:e] is whole lines: s starts a line and e
// starts one too (or is the end of src).
func wholeLines(src []byte, s, e int) bool {
	return (s == 0 || src[s-1] == '\n') && (e == len(src) || src[e-1] == '\n')
}

// aroundRemoval is the range of out to delete around the line start at
// where lines were removed: the comment lines above it that described them
// (indent is the removed statement's) and the blank
// lines that would double up. No range holding another edit's text is taken.
func aroundRemoval(out []byte, at int, indent string, touches []touch) (int, int) {
	s, e := at, at
	nextIndent, nextBlank, eof := lineShape(out, at)
	// Comments above: only when nothing of the paragraph stays under them.
	if eof || nextBlank || len(nextIndent) < len(indent) {
		for s > 0 {
			ls := lineStart(out, s-1)
			line := string(out[ls:s])
			trimmed := strings.TrimSpace(line)
			if !strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "#!") || strings.Contains(trimmed, "coding") ||
				strings.HasPrefix(trimmed, "# pallasify:") || leadingSpace(out, ls) != indent || touched(touches, ls, s) {
				break
			}
			s = ls
		}
	}
	above := 0
	for b := s; b > 0; {
		ls := lineStart(out, b-1)
		if strings.TrimSpace(string(out[ls:b])) != "" {
			break
		}
		above++
		b = ls
	}
	below, end := 0, e
	for end < len(out) {
		le := bytes.IndexByte(out[end:], '\n')
		if le < 0 || strings.TrimSpace(string(out[end:end+le])) != "" {
			break
		}
		below++
		end += le + 1
	}
	header := s > 0 && strings.HasSuffix(strings.TrimSpace(codeOf(out[lineStart(out, s-1):s])), ":")
	switch {
	case below > 0 && (above > 0 || header || s == 0):
		// Keep the larger run: drop the smaller one below, all below a
		// header or at the top of the file.
		drop := min(above, below)
		if header || s == 0 {
			drop = below
		}
		for ; drop > 0; drop-- {
			e += bytes.IndexByte(out[e:], '\n') + 1
		}
	case at == len(out) || eof && below == 0:
		// The end of the file: no blank lines left before it.
		for ; above > 0; above-- {
			s = lineStart(out, s-1)
		}
	}
	if touched(touches, s, at) || touched(touches, at, e) {
		return at, at
	}
	return s, e
}

// lineShape describes the first non-blank line at or after at: its indent,
// whether a blank line comes first, and whether there is none (the end of
// the file).
func lineShape(out []byte, at int) (indent string, blank, eof bool) {
	for at < len(out) {
		le := bytes.IndexByte(out[at:], '\n')
		if le < 0 {
			le = len(out) - at
		}
		if strings.TrimSpace(string(out[at:at+le])) != "" {
			return leadingSpace(out, at), blank, false
		}
		blank = true
		at += le + 1
	}
	return "", blank, true
}

// codeOf is a line without its comment (a rough cut: a '#' inside a string
// ends it too, which only makes a header look like none).
func codeOf(line []byte) string {
	if i := bytes.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	return string(line)
}

// touched reports whether an edit's new text lies in out[s:e].
func touched(touches []touch, s, e int) bool {
	for _, t := range touches {
		if t.o < t.oe && t.o < e && s < t.oe {
			return true
		}
	}
	return false
}

// cut replaces out[s:e] with repl and moves the touches after it; repl
// counts as written by a fix (a touch).
func cut(out []byte, touches []touch, s, e int, repl string) ([]byte, []touch) {
	res := make([]byte, 0, len(out)-(e-s)+len(repl))
	res = append(append(append(res, out[:s]...), repl...), out[e:]...)
	delta := len(repl) - (e - s)
	moved := touches[:0:0]
	for _, t := range touches {
		switch {
		case t.o >= e:
			t.o, t.oe = t.o+delta, t.oe+delta
		case t.oe <= s:
		default:
			t.o, t.oe = min(t.o, s), max(s, min(t.oe+delta, s+len(repl)))
			if t.oe < t.o {
				t.oe = t.o
			}
		}
		moved = append(moved, t)
	}
	if repl != "" {
		// Written whole lines: no source line to compare widths with.
		moved = append(moved, touch{o: s, oe: s + len(repl)})
	}
	return res, moved
}

// deadPass finds one `pass` a fix wrote that is dead (see the top of the
// file) and returns what to replace: out[s:e] by repl.
func deadPass(tree *ts.Tree, out []byte, touches []touch) (s, e int, repl string, ok bool) {
	ts.Walk(tree.Root(), func(n *ts.Node) bool {
		if ok {
			return false
		}
		if n.Type() != "pass_statement" {
			return true
		}
		ns, ne := int(n.StartByte()), int(n.EndByte())
		if !ours(touches, ns, ne) {
			return false
		}
		block := n.Parent()
		if block == nil || block.Type() != "block" {
			return false
		}
		if statements(block) > 1 {
			s, e, ok = lineRange(out, n)
			return false
		}
		s, e, repl, ok = deadConstruct(out, block)
		return false
	})
	return
}

// ours reports whether out[s:e] lies inside a fix's new text.
func ours(touches []touch, s, e int) bool {
	for _, t := range touches {
		if t.o <= s && e <= t.oe {
			return true
		}
	}
	return false
}

// statements counts the statements of block (comments aside).
func statements(block *ts.Node) int {
	n := 0
	for _, c := range ts.Children(block) {
		if c.Type() != "comment" {
			n++
		}
	}
	return n
}

// deadConstruct is what to do with the construct whose block holds only a
// `pass` a fix wrote.
func deadConstruct(out []byte, block *ts.Node) (s, e int, repl string, ok bool) {
	par := block.Parent()
	if par == nil {
		return 0, 0, "", false
	}
	var gone *ts.Node
	switch par.Type() {
	case "else_clause":
		gone = par
	case "elif_clause":
		if next := par.NextNamedSibling(); next == nil && pureCondition(out, par.ChildByFieldName("condition")) {
			gone = par
		}
	case "if_statement":
		if par.ChildByFieldName("alternative") == nil && blockField(par, "consequence", block) &&
			pureCondition(out, par.ChildByFieldName("condition")) {
			gone = par
		}
	case "try_statement":
		if !blockField(par, "body", block) {
			return 0, 0, "", false
		}
		for _, c := range ts.Children(par) {
			if c.Type() == "else_clause" || c.Type() == "finally_clause" {
				return 0, 0, "", false
			}
		}
		gone = par
	}
	if gone == nil {
		return 0, 0, "", false
	}
	s, e, ok = lineRange(out, gone)
	if !ok {
		return 0, 0, "", false
	}
	if gone.Type() != "else_clause" && gone.Type() != "elif_clause" {
		if outer := gone.Parent(); outer != nil && outer.Type() == "block" && statements(outer) == 1 {
			indent := leadingSpace(out, s)
			return s, e, indent + "pass\n", true
		}
	}
	return s, e, "", true
}

// blockField reports whether block is par's child in field.
func blockField(par *ts.Node, field string, block *ts.Node) bool {
	f := par.ChildByFieldName(field)
	return f != nil && f.Equal(block)
}

// lineRange is the range of n's whole lines (to the end of its last line's
// newline), when nothing else shares them.
func lineRange(out []byte, n *ts.Node) (int, int, bool) {
	s, e := int(n.StartByte()), int(n.EndByte())
	ls := lineStart(out, s)
	if strings.TrimSpace(string(out[ls:s])) != "" {
		return 0, 0, false
	}
	j := e
	for j < len(out) && (out[j] == ' ' || out[j] == '\t' || out[j] == '\r') {
		j++
	}
	if j < len(out) && out[j] != '\n' {
		return 0, 0, false
	}
	if j < len(out) {
		j++
	}
	return ls, j, true
}

// pureMethods are the str methods a condition may call without a side
// effect worth keeping (device.startswith("cuda:")).
var pureMethods = map[string]bool{"startswith": true, "endswith": true, "lower": true, "upper": true, "strip": true,
	"lstrip": true, "rstrip": true, "isdigit": true, "isnumeric": true, "isalpha": true, "isalnum": true,
	"casefold": true}

// pureCondition reports whether evaluating n has no side effect worth
// keeping: names, attributes, literals (f-strings of such), comparisons,
// boolean operators, str methods and isinstance/len of such.
func pureCondition(out []byte, n *ts.Node) bool {
	if n == nil {
		return false
	}
	switch n.Type() {
	case "identifier", "integer", "float", "true", "false", "none", "string_content", "string_start", "string_end",
		"escape_sequence", "comment":
		return true
	case "attribute":
		return pureCondition(out, n.ChildByFieldName("object"))
	case "string", "interpolation", "comparison_operator", "boolean_operator", "not_operator", "parenthesized_expression",
		"tuple", "list", "set", "unary_operator", "argument_list":
		for _, c := range ts.Children(n) {
			if !pureCondition(out, c) {
				return false
			}
		}
		return true
	case "call":
		fn := n.ChildByFieldName("function")
		if fn == nil {
			return false
		}
		switch fn.Type() {
		case "attribute":
			attr := fn.ChildByFieldName("attribute")
			if attr == nil || !pureMethods[ts.Text(attr, out)] || !pureCondition(out, fn.ChildByFieldName("object")) {
				return false
			}
		case "identifier":
			if name := ts.Text(fn, out); name != "isinstance" && name != "len" {
				return false
			}
		default:
			return false
		}
		return pureCondition(out, n.ChildByFieldName("arguments"))
	}
	return false
}
