package kit

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Constant returns the edits that replace the expression n with the
// constant value without leaving dead code behind: `a if True else b`
// becomes `a`, `x and True` becomes `x`, `not True` counts as False, and
// an `if True:` / `if False: ... else:` statement keeps only the branch that
// runs, dedented. Where none of these applies (or a branch holds a string
// over several lines, which dedenting would change) n becomes the literal.
func Constant(p *rule.Pass, n *ts.Node, value bool) []rule.Edit {
	lit := map[bool]string{true: "True", false: "False"}
	at := n
	for {
		par := p.Parent(at)
		if par == nil {
			break
		}
		switch par.Type() {
		case "parenthesized_expression":
			at = par
			continue
		case "not_operator":
			at, value = par, !value
			continue
		case "boolean_operator":
			op := p.Text(par.ChildByFieldName("operator"))
			left, right := par.ChildByFieldName("left"), par.ChildByFieldName("right")
			// x and True, True and x, x or False, False or x: x.
			if (op == "and") == value {
				// Delete around the operand kept, not rewrite it: another
				// rule's fix inside it (torch.cuda.is_available() and
				// torch.cuda.is_bf16_supported()) still applies.
				if left.Equal(at) {
					return []rule.Edit{{Start: Start(par), End: Start(right)}}
				}
				return []rule.Edit{{Start: End(left), End: End(par)}}
			}
		case "conditional_expression":
			if c := par.NamedChild(1); c != nil && c.Equal(at) && par.NamedChildCount() == 3 {
				if !value {
					return []rule.Edit{{Start: Start(par), End: Start(par.NamedChild(2))}}
				}
				return []rule.Edit{{Start: End(par.NamedChild(0)), End: End(par)}}
			}
		case "if_statement":
			if c := par.ChildByFieldName("condition"); c != nil && c.Equal(at) {
				if ed, ok := onlyBranch(p, par, value); ok {
					return ed
				}
			}
		}
		break
	}
	return []rule.Edit{{Start: Start(at), End: End(at), New: lit[value]}}
}

// onlyBranch returns the edits that leave of the if statement st only the
// branch that runs when its condition is value: that branch's block,
// dedented to the statement's indent, or the first elif turned into an if.
func onlyBranch(p *rule.Pass, st *ts.Node, value bool) ([]rule.Edit, bool) {
	var alts []*ts.Node
	for i := 0; i < int(st.NamedChildCount()); i++ {
		if c := st.NamedChild(i); c.Type() == "elif_clause" || c.Type() == "else_clause" {
			alts = append(alts, c)
		}
	}
	stStart := lineStartOf(p.Src, Start(st))
	var body, header *ts.Node // the block that runs; the clause whose `:` opens it
	switch {
	case value:
		body, header = st.ChildByFieldName("consequence"), st
	case len(alts) > 0 && alts[0].Type() == "elif_clause":
		// if False: a / elif c: b  ->  if c: b
		return []rule.Edit{{Start: Start(st), End: Start(alts[0]) + len("elif"), New: "if"}}, true
	case len(alts) > 0:
		body, header = alts[0].ChildByFieldName("body"), alts[0]
	default:
		return nil, false // if False without else: a human removes the block
	}
	if body == nil || multilineString(body) {
		return nil, false
	}
	// The block starts on the line after its header's colon; a comment
	// after the colon or above the first statement goes with the block.
	colon := -1
	for i := 0; i < int(header.ChildCount()); i++ {
		if c := header.Child(i); c.Type() == ":" && Start(c) < Start(body) {
			colon = End(c)
		}
	}
	nl := strings.IndexByte(string(p.Src[max(colon, 0):]), '\n')
	if colon < 0 || nl < 0 || strings.TrimSpace(string(p.Src[colon:colon+nl])) != "" {
		return nil, false // a one-line `if x: y`, or a comment after the colon
	}
	blockStart := colon + nl + 1
	indent := string(p.Src[stStart:Start(st)])
	bodyIndent := string(p.Src[lineStartOf(p.Src, Start(body)):Start(body)])
	if !strings.HasPrefix(bodyIndent, indent) || strings.TrimSpace(bodyIndent) != "" || len(bodyIndent) == len(indent) {
		return nil, false
	}
	extra := len(bodyIndent) - len(indent)
	// Drop the lines before the block (the `if`/`else` lines), dedent
	// each of its lines, drop what follows it in the statement.
	edits := []rule.Edit{{Start: stStart, End: blockStart}}
	for ls := blockStart; ls < End(body); {
		le := strings.IndexByte(string(p.Src[ls:]), '\n')
		line := p.Src[ls:]
		if le >= 0 {
			line = p.Src[ls : ls+le]
		}
		if strings.TrimSpace(string(line)) != "" {
			if len(line) < extra || strings.TrimSpace(string(line[:extra])) != "" {
				return nil, false // a line indented less than the block (a comment)
			}
			edits = append(edits, rule.Edit{Start: ls, End: ls + extra})
		}
		if le < 0 {
			break
		}
		ls += le + 1
	}
	if End(body) < End(st) {
		edits = append(edits, rule.Edit{Start: End(body), End: End(st)})
	}
	return edits, true
}

func lineStartOf(src []byte, off int) int {
	for off > 0 && src[off-1] != '\n' {
		off--
	}
	return off
}

// multilineString reports whether n holds a string literal over several
// lines (dedenting its lines would change its value).
func multilineString(n *ts.Node) bool {
	found := false
	ts.Walk(n, func(c *ts.Node) bool {
		if c.Type() == "string" && c.StartPoint().Row != c.EndPoint().Row {
			found = true
		}
		return !found
	})
	return found
}
