package rule

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Line wrapping: the one printer of the lines a rewrite writes. After the
// fixes are applied, every output line an edit touched that is longer than
// Options.LineLength (and longer than the line it replaced: a line that was
// already over the limit and gained nothing stays as it was) is wrapped the
// way black wraps it, inside brackets and never with a backslash:
//
//   - the statement splits at its last bracket pair with a body
//     (`head(` / body indented one level / `)tail`), skipping trailing pairs
//     whose head or tail would not fit (black's right-hand split);
//   - a condition, return value, assert test or assignment value with a
//     top-level delimiter (`and`, `or`, a ternary, a comparison, a comma)
//     is put inside parentheses of its own first (black's invisible
//     parentheses);
//   - a body that still does not fit splits at its loosest top-level
//     delimiter: one element per line with a trailing comma after commas,
//     the operator first on its line for `and`, `or`, `if`/`else` and
//     comparisons; each part that is still too long is split the same way.
//
// A line the printer cannot read safely (inside a triple-quoted string, with
// brackets it does not close, after a backslash continuation) stays as it is.

// DefaultLineLength is the limit when the repository configures none.
const DefaultLineLength = 100

// pyTok is one token of a Python line.
type pyTok struct {
	text  string
	space string // the whitespace before it on the original line
	kind  byte   // 'n' name or keyword, 's' string, 'o' operator, '(' opening, ')' closing, '#' comment, '0' number
}

// tokenizeLine splits one physical line's code (no newline) into tokens; ok
// is false when it holds something the printer does not read (an unclosed
// string, a backslash continuation, a triple quote).
func tokenizeLine(s string) ([]pyTok, bool) {
	var toks []pyTok
	i := 0
	for i < len(s) {
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		space := s[i:j]
		if j >= len(s) {
			break
		}
		i = j
		c := s[i]
		switch {
		case c == '#':
			toks = append(toks, pyTok{s[i:], space, '#'})
			return toks, true
		case c == '\\':
			return nil, false
		case c == '"' || c == '\'' || isStrPrefix(s, i):
			k := i
			for k < len(s) && s[k] != '"' && s[k] != '\'' {
				k++
			}
			if k+2 < len(s) && s[k+1] == s[k] && s[k+2] == s[k] {
				return nil, false // triple-quoted
			}
			q := s[k]
			k++
			for k < len(s) && s[k] != q {
				if s[k] == '\\' {
					k++
				}
				k++
			}
			if k >= len(s) {
				return nil, false
			}
			if strings.ContainsAny(s[i:k+1], "{") && strings.ContainsAny(strings.ToLower(s[i:j+1]), "f") {
				// An f-string may nest the same quote (Python 3.12): read
				// it only when its fields hold no quote at all.
				if strings.ContainsAny(s[i : k+1][strings.IndexByte(s[i:k+1], '{'):], "'\"") {
					inner := s[i : k+1]
					if strings.Count(inner, string(q)) != 2 {
						return nil, false
					}
				}
			}
			toks = append(toks, pyTok{s[i : k+1], space, 's'})
			i = k + 1
		case isIdentByte(c):
			k := i
			for k < len(s) && isIdentByte(s[k]) {
				k++
			}
			kind := byte('n')
			if c >= '0' && c <= '9' {
				kind = '0'
				for k < len(s) && (isIdentByte(s[k]) || s[k] == '.') {
					k++
				}
			}
			toks = append(toks, pyTok{s[i:k], space, kind})
			i = k
		case c == '(' || c == '[' || c == '{':
			toks = append(toks, pyTok{s[i : i+1], space, '('})
			i++
		case c == ')' || c == ']' || c == '}':
			toks = append(toks, pyTok{s[i : i+1], space, ')'})
			i++
		default:
			k := i + 1
			for _, op := range []string{"**=", "//=", ">>=", "<<=", "...", "->", ":=", "==", "!=", "<=", ">=", "**", "//",
				"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "<<", ">>"} {
				if strings.HasPrefix(s[i:], op) {
					k = i + len(op)
					break
				}
			}
			toks = append(toks, pyTok{s[i:k], space, 'o'})
			i = k
		}
	}
	return toks, true
}

// isStrPrefix reports whether s[i:] starts a prefixed string literal (f"",
// rb”, ...).
func isStrPrefix(s string, i int) bool {
	if i > 0 && isIdentByte(s[i-1]) {
		return false
	}
	k := i
	for k < len(s) && k-i < 2 && strings.IndexByte("rRbBfFuU", s[k]) >= 0 {
		k++
	}
	return k > i && k < len(s) && (s[k] == '"' || s[k] == '\'')
}

// render joins toks as they were spaced, the first without its space.
func render(toks []pyTok) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteString(t.space)
		}
		b.WriteString(t.text)
	}
	return b.String()
}

func width(s string) int { return utf8.RuneCountInString(s) }

// balanced reports whether toks close every bracket they open, never
// closing one they did not open.
func balanced(toks []pyTok) bool {
	d := 0
	for _, t := range toks {
		switch t.kind {
		case '(':
			d++
		case ')':
			d--
			if d < 0 {
				return false
			}
		}
	}
	return d == 0
}

// Delimiter priorities (black's): the loosest kind present is split first.
const (
	prioComprehension = 20
	prioComma         = 18
	prioTernary       = 16
	prioLogic         = 14
	prioCompare       = 10
)

// delimiters returns the priority of the delimiter at each top-level token
// of toks (0: none). Commas split after themselves; the others before.
func delimiters(toks []pyTok) []int {
	pr := make([]int, len(toks))
	d := 0
	lambda := -1 // the depth of an open lambda's parameters
	comp := false
	for i, t := range toks {
		switch t.kind {
		case '(':
			d++
			continue
		case ')':
			d--
			continue
		}
		if d != 0 {
			continue
		}
		switch t.text {
		case "lambda":
			lambda = d
		case ":":
			if lambda == d {
				lambda = -1
			}
		case ",":
			if lambda < 0 {
				pr[i] = prioComma
			}
		case "for":
			comp = true
			pr[i] = prioComprehension
		case "async":
			if i+1 < len(toks) && toks[i+1].text == "for" {
				comp = true
				pr[i] = prioComprehension
			}
		case "if":
			if comp {
				pr[i] = prioComprehension
			} else if i > 0 {
				pr[i] = prioTernary
			}
		case "else":
			if !comp {
				pr[i] = prioTernary
			}
		case "and", "or":
			pr[i] = prioLogic
		case "==", "!=", "<", ">", "<=", ">=", "is", "in":
			pr[i] = prioCompare
			if t.text == "is" || t.text == "in" {
				if i > 0 && toks[i-1].text == "not" && t.text == "in" {
					pr[i] = 0
				}
			}
		case "not":
			if i+1 < len(toks) && toks[i+1].text == "in" {
				pr[i] = prioCompare
			}
		}
		if t.text == "for" && i > 0 && toks[i-1].text == "async" {
			pr[i] = 0
		}
	}
	return pr
}

// wrapLine returns the lines (no newlines) that replace line, or nil when
// it fits or cannot be wrapped. cont: the line continues a bracket opened on
// an earlier line, so it may break at its own delimiters.
func wrapLine(line string, limit int, cont bool) []string {
	if width(line) <= limit {
		return nil
	}
	code := strings.TrimLeft(line, " \t")
	indent := line[:len(line)-len(code)]
	toks, ok := tokenizeLine(code)
	if !ok || len(toks) == 0 {
		return nil
	}
	var comment *pyTok
	if last := toks[len(toks)-1]; last.kind == '#' {
		comment = &last
		toks = toks[:len(toks)-1]
		if len(toks) == 0 || width(indent+render(toks)) <= limit {
			return nil // only the comment is long
		}
	}
	if !balanced(toks) {
		return nil
	}
	var out []string
	if cont {
		out = splitBody(indent, toks, limit, false)
	} else {
		out = splitStatement(indent, toks, limit)
	}
	if len(out) < 2 {
		return nil
	}
	if comment != nil {
		out[len(out)-1] += "  " + comment.text
	}
	return out
}

// splitStatement splits a whole statement that stands on one line.
func splitStatement(indent string, toks []pyTok, limit int) []string {
	if head, body, tail, ok := invisibleParens(toks); ok {
		pr := delimiters(body)
		// Black omits these optional parentheses when the expression
		// has no top-level delimiter, or one and ends with a bracket
		// pair it may split at (_can_omit_closing_paren) — unless the
		// first line of that split would not fit.
		top, n := maxPrio(pr)
		if top > 0 {
			if n == 1 && body[len(body)-1].kind == ')' && closingFits(body, indent, limit) {
				if lines := rhs(indent, toks, limit); len(lines) > 1 && width(lines[0]) <= limit {
					return lines
				}
			}
			h := indent + render(head) + sep(head, body) + "("
			lines := []string{h}
			lines = append(lines, splitBody(indent+"    ", body, limit, true)...)
			return append(lines, indent+")"+render(tail))
		}
	}
	return rhs(indent, toks, limit)
}

// closingFits reports whether black may split toks, which end with a
// closing bracket, at that bracket's pair: other brackets come before the
// pair's opening one, or the text up to it fits.
func closingFits(toks []pyTok, indent string, limit int) bool {
	o := matchingOpen(toks, len(toks)-1)
	for _, t := range toks[:o] {
		if t.kind == '(' {
			return true
		}
	}
	return width(indent+render(toks[:o+1])) <= limit
}

// matchingOpen is the index of the bracket toks[c] closes.
func matchingOpen(toks []pyTok, c int) int {
	d := 0
	for i := c; i >= 0; i-- {
		switch toks[i].kind {
		case ')':
			d++
		case '(':
			d--
			if d == 0 {
				return i
			}
		}
	}
	return 0
}

func sep(head, body []pyTok) string {
	if len(head) == 0 || len(body) == 0 {
		return ""
	}
	return " "
}

func maxPrio(pr []int) (top, n int) {
	for _, p := range pr {
		switch {
		case p > top:
			top, n = p, 1
		case p == top && p > 0:
			n++
		}
	}
	return top, n
}

// invisibleParens splits a statement whose expression black would wrap in
// parentheses of its own: head (the keyword or the target and `=`), the
// expression, and tail (a compound statement's `:`).
func invisibleParens(toks []pyTok) (head, body, tail []pyTok, ok bool) {
	first := toks[0].text
	switch first {
	case "if", "elif", "while":
		if toks[len(toks)-1].text != ":" || len(toks) < 3 {
			return nil, nil, nil, false
		}
		return toks[:1], toks[1 : len(toks)-1], toks[len(toks)-1:], true
	case "return", "assert", "del":
		if len(toks) < 2 {
			return nil, nil, nil, false
		}
		body = toks[1:]
		if first == "assert" {
			// the test only; the message stays after it
			if i := topLevel(body, ","); i > 0 {
				return toks[:1], body[:i], body[i:], true
			}
		}
		return toks[:1], body, nil, true
	}
	if i := topLevel(toks, "="); i > 0 && i+1 < len(toks) && topLevel(toks[i+1:], "=") < 0 {
		return toks[:i+1], toks[i+1:], nil, true
	}
	return nil, nil, nil, false
}

// topLevel is the index of the first top-level token with text s, or -1.
func topLevel(toks []pyTok, s string) int {
	d := 0
	for i, t := range toks {
		switch t.kind {
		case '(':
			d++
		case ')':
			d--
		default:
			if d == 0 && t.text == s {
				return i
			}
		}
	}
	return -1
}

// lastBracket is the index of the opening token of the last top-level
// bracket pair of toks with a non-empty body whose head and tail fit
// (black's omitting of optional trailers), else of the last pair with a
// body; ok is false when there is none.
func lastBracket(toks []pyTok, indent string, limit int) (int, bool) {
	var pairs [][2]int
	d, open := 0, -1
	for i, t := range toks {
		switch t.kind {
		case '(':
			if d == 0 {
				open = i
			}
			d++
		case ')':
			d--
			if d == 0 && i > open+1 {
				pairs = append(pairs, [2]int{open, i})
			}
		}
	}
	if len(pairs) == 0 {
		return 0, false
	}
	for k := len(pairs) - 1; k >= 0; k-- {
		o, c := pairs[k][0], pairs[k][1]
		if width(indent+render(toks[:o+1])) <= limit && width(indent+render(toks[c:])) <= limit {
			return o, true
		}
	}
	return pairs[len(pairs)-1][0], true
}

// rhs is black's right-hand split: head up to the chosen opening bracket,
// the body one level in, the closing bracket and what follows it.
func rhs(indent string, toks []pyTok, limit int) []string {
	o, ok := lastBracket(toks, indent, limit)
	if !ok {
		return nil
	}
	c := matching(toks, o)
	lines := []string{indent + render(toks[:o+1])}
	body := toks[o+1 : c]
	if collection(toks, o) && topLevel(body, ",") >= 0 {
		// A split tuple, list, set or dict display is one element a line
		// (black's trailing comma makes it magic).
		lines = append(lines, splitBody(indent+"    ", body, 0, true)...)
	} else {
		lines = append(lines, splitBody(indent+"    ", body, limit, true)...)
	}
	tail := render(toks[c:])
	return append(lines, indent+tail)
}

// collection reports whether the bracket toks[o] opens a display (a tuple,
// list, set or dict), not a call's arguments or a subscript.
func collection(toks []pyTok, o int) bool {
	if o == 0 {
		return true
	}
	prev := toks[o-1]
	switch {
	case prev.kind == ')' || prev.kind == 's':
		return false
	case prev.kind == 'n' || prev.kind == '0':
		return keywords[prev.text]
	}
	return true
}

// keywords are the Python keywords a display may follow.
var keywords = map[string]bool{"in": true, "not": true, "and": true, "or": true, "is": true, "if": true, "else": true,
	"return": true, "assert": true, "yield": true, "lambda": true, "for": true, "await": true, "del": true, "elif": true,
	"while": true, "with": true, "from": true, "import": true, "as": true}

// matching is the index of the bracket closing toks[o].
func matching(toks []pyTok, o int) int {
	d := 0
	for i := o; i < len(toks); i++ {
		switch toks[i].kind {
		case '(':
			d++
		case ')':
			d--
			if d == 0 {
				return i
			}
		}
	}
	return len(toks) - 1
}

// splitBody lays out the tokens of a bracket's body at indent: one line
// when it fits, else split at its loosest top-level delimiter (a trailing
// comma added after a comma split when trailing is set), each part split
// again while it does not fit.
func splitBody(indent string, toks []pyTok, limit int, trailing bool) []string {
	if len(toks) == 0 {
		return nil
	}
	one := indent + render(toks)
	if width(one) <= limit {
		return []string{one}
	}
	pr := delimiters(toks)
	top, _ := maxPrio(pr)
	if top == 0 {
		if sub := rhs(indent, toks, limit); len(sub) > 1 {
			return sub
		}
		return []string{one}
	}
	var parts [][]pyTok
	start := 0
	for i := range toks {
		if pr[i] != top {
			continue
		}
		if top == prioComma {
			parts = append(parts, toks[start:i+1])
			start = i + 1
		} else if i > start {
			parts = append(parts, toks[start:i])
			start = i
		}
	}
	if start < len(toks) {
		parts = append(parts, toks[start:])
	}
	var lines []string
	for k, part := range parts {
		if top == prioComma && k == len(parts)-1 && trailing && part[len(part)-1].text != "," && !unpacks(part) {
			part = append(append([]pyTok(nil), part...), pyTok{",", "", 'o'})
		}
		l := indent + render(part)
		if width(l) <= limit {
			lines = append(lines, l)
			continue
		}
		lines = append(lines, splitPart(indent, part, limit)...)
	}
	return lines
}

// unpacks reports whether part is a `*args` or `**kwargs` element (a
// trailing comma after it is fine in calls but not in every older grammar;
// black leaves it out there too).
func unpacks(part []pyTok) bool {
	return part[0].text == "*" || part[0].text == "**"
}

// splitPart splits one element of a body that does not fit on its line
// (the element stays inside the enclosing brackets, so no parentheses are
// added): at its loosest top-level delimiter, the parts at the same indent
// (`device=x` / `if cond` / `else y,`), else at its last bracket pair.
func splitPart(indent string, part []pyTok, limit int) []string {
	body := part
	if body[len(body)-1].text == "," {
		body = body[:len(body)-1]
	}
	pr := delimiters(body)
	pr[0] = 0 // a part may start with its operator (`and x`): no split before it
	if top, _ := maxPrio(pr); top > 0 && top != prioComma {
		var lines []string
		start := 0
		for i := range body {
			if pr[i] == top && i > start {
				lines = append(lines, fitPart(indent, body[start:i], limit)...)
				start = i
			}
		}
		lines = append(lines, fitPart(indent, part[start:], limit)...)
		return lines
	}
	if sub := rhs(indent, part, limit); len(sub) > 1 {
		return sub
	}
	return []string{indent + render(part)}
}

// fitPart is one line for part when it fits, else its split.
func fitPart(indent string, part []pyTok, limit int) []string {
	if l := indent + render(part); width(l) <= limit {
		return []string{l}
	}
	return splitPart(indent, part, limit)
}

// touch is where one applied edit landed: its new text at out[o:oe], in
// place of src[s:e].
type touch struct{ o, oe, s, e int }

// wrapTouched returns out with each line an edit touched wrapped to limit
// (see the top of this file), or nil when no line needed it. A touched line
// may be as long as the source line it replaced.
// maxWrapWidth is the longest line the printer wraps.
const maxWrapWidth = 4000

func wrapTouched(src, out []byte, touches []touch, limit int) []byte {
	starts := lineStarts(out)
	lineOf := func(off int) int {
		lo, hi := 0, len(starts)
		for hi-lo > 1 {
			m := (lo + hi) / 2
			if starts[m] <= off {
				lo = m
			} else {
				hi = m
			}
		}
		return lo
	}
	// The width of a source line, once per line: a file's one line can
	// hold 100,000 touches (pipeline's plus.py), and measuring the line
	// for each was quadratic.
	srcStarts := lineStarts(src)
	srcWidths := map[int]int{}
	srcWidth := func(off int) int {
		l := sort.SearchInts(srcStarts, off+1) - 1
		if w, ok := srcWidths[l]; ok {
			return w
		}
		w := width(outLine(src, srcStarts, max(l, 0)))
		srcWidths[l] = w
		return w
	}
	allow := map[int]int{}
	raise := func(l, w int) {
		if cur, ok := allow[l]; !ok || w > cur {
			allow[l] = w
		}
	}
	for _, t := range touches {
		first, last := lineOf(t.o), lineOf(max(t.o, t.oe-1))
		for l := first; l <= last; l++ {
			raise(l, limit)
		}
		wholeLines := t.s == t.e && (t.s == 0 || src[t.s-1] == '\n') && strings.HasSuffix(string(out[t.o:t.oe]), "\n")
		if !wholeLines {
			raise(first, max(limit, srcWidth(t.s)))
			raise(last, max(limit, srcWidth(t.e)))
		}
	}
	var long []int
	for l, w := range allow {
		// A line past maxWrapWidth is left as it is: no reviewer reads one
		// (a generated file's 2.5 MB expression: pipeline's plus.py), and
		// splitting it costs time quadratic in its length.
		if lw := width(outLine(out, starts, l)); lw > w && lw <= maxWrapWidth {
			long = append(long, l)
		}
	}
	if len(long) == 0 {
		return nil
	}
	depth, skip := lineStates(out, starts)
	wrapped := map[int][]string{}
	for _, l := range long {
		if skip[l] {
			continue
		}
		if lines := wrapOne(outLine(out, starts, l), limit, depth[l] > 0); lines != nil {
			wrapped[l] = lines
		}
	}
	if len(wrapped) == 0 {
		return nil
	}
	var b strings.Builder
	b.Grow(len(out) + 64*len(wrapped))
	for l := range starts {
		line := string(out[starts[l]:endOfLine(out, starts, l)])
		if lines, ok := wrapped[l]; ok {
			line = strings.Join(lines, "\n")
		}
		b.WriteString(line)
		if end := endOfLine(out, starts, l); end < len(out) {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// wrapOne wraps one line; a continuation line that closes brackets opened
// above it keeps those closing tokens (and what follows) on its last line.
func wrapOne(line string, limit int, cont bool) []string {
	if !cont {
		return wrapLine(line, limit, false)
	}
	code := strings.TrimLeft(line, " \t")
	indent := line[:len(line)-len(code)]
	toks, ok := tokenizeLine(code)
	if !ok {
		return nil
	}
	d := 0
	for i, t := range toks {
		switch t.kind {
		case '(':
			d++
		case ')':
			d--
		}
		if d < 0 {
			if i == 0 {
				return nil
			}
			lines := wrapLine(indent+render(toks[:i]), limit, true)
			if lines == nil {
				return nil
			}
			rest := toks[i:]
			lines[len(lines)-1] += rest[0].space + render(rest)
			return lines
		}
	}
	return wrapLine(line, limit, true)
}

func lineStarts(b []byte) []int {
	starts := []int{0}
	for i, c := range b {
		if c == '\n' && i+1 < len(b) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// endOfLine is the offset of line l's newline (or the end of b).
func endOfLine(b []byte, starts []int, l int) int {
	if l+1 < len(starts) {
		return starts[l+1] - 1
	}
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return len(b) - 1
	}
	return len(b)
}

// outLine is line l of b without its line ending.
func outLine(b []byte, starts []int, l int) string {
	return strings.TrimRight(string(b[starts[l]:endOfLine(b, starts, l)]), "\r")
}

// lineStates scans Python source: for each line, the bracket depth at its
// start, and skip when it starts inside a string or follows a backslash
// continuation (the printer leaves such a line alone).
func lineStates(b []byte, starts []int) (depth []int, skip []bool) {
	depth = make([]int, len(starts))
	skip = make([]bool, len(starts))
	d, line := 0, 0
	var quote string // the open string's closing quote, "" outside strings
	for i := 0; i < len(b); i++ {
		for line+1 < len(starts) && starts[line+1] <= i {
			line++
			depth[line] = d
			skip[line] = quote != "" || (starts[line] >= 2 && b[starts[line]-2] == '\\')
		}
		c := b[i]
		if quote != "" {
			switch {
			case c == '\\':
				i++
			case strings.HasPrefix(string(b[i:min(i+3, len(b))]), quote):
				i += len(quote) - 1
				quote = ""
			case c == '\n' && len(quote) == 1:
				quote = "" // an unterminated string: the parser's problem
			}
			continue
		}
		switch c {
		case '#':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			i--
		case '"', '\'':
			quote = string(c)
			if i+2 < len(b) && b[i+1] == c && b[i+2] == c {
				quote = strings.Repeat(string(c), 3)
				i += 2
			}
		case '(', '[', '{':
			d++
		case ')', ']', '}':
			d = max(d-1, 0)
		}
	}
	return depth, skip
}
