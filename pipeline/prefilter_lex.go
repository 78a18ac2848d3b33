package pipeline

import "bytes"

// The lexical pre-check: before the needle scan, the comments and bare
// string statements (docstrings, and any other statement that is a lone
// string literal) of a Python file are found, and a rule's needle counts only
// where its match lies outside them (prefilter.SelectCode). A rule whose
// needles occur only there is not run, and a file no rule can report on is
// not parsed. No rule reports on a comment or a bare string statement, so a
// needle found only there cannot lead to a finding: the pre-check only saves
// work. TestPrefilterEquivalence (the whole run with and without needles) and
// TestNonCodeSpansAgreeWithTreeSitter (every span is a tree-sitter comment or
// a string that is a whole expression statement) prove it on the fixtures
// and, with PALLASIFY_REALTREE, on a real tree.
//
// The lexer follows Python 3.12's tokenizer (prefixes, triple quotes,
// escapes, line continuations, brackets, f-strings with their replacement
// fields and format specs), but only as far as it is sure: on anything it
// does not follow exactly (an unterminated string, a comment or a string of
// the enclosing quote inside an f-string field, an unbalanced bracket, `\{`
// in an f-string) it gives up on the whole file, which is then scanned as it
// is. Ordinary string literals ("cuda:0") and every f-string are never
// blanked: rules read them.

// spanKind says what a blanked span is.
type spanKind uint8

const (
	spanComment    spanKind = iota + 1 // "#" to the end of the line
	spanBareString                     // a string literal that is a whole statement
)

// nonCodeSpan is a byte range the pre-check blanks.
type nonCodeSpan struct {
	start, end int
	kind       spanKind
}

// codeString is a string literal in code that is not an f-string (or a
// t-string) and not a bare string statement: bytes start (its prefix) to end
// (after its closing quote); its content starts at content, after the
// opening quote(s). A needle part marked `\q` (rule.StringStart) counts
// inside it only where the match starts the content and rule.StringOpens
// (prefilter.SelectCode).
type codeString struct {
	start, content, end int
}

// nonCodeSpans lists, in order, the comments and bare string statements of a
// Python source; ok is false when the lexer gives up (see the package note
// above), and then spans is nil.
func nonCodeSpans(src []byte) (spans []nonCodeSpan, ok bool) {
	spans, _, ok = lexPython(src)
	return spans, ok
}

// lexPython is nonCodeSpans that also lists, in order, the code strings
// (codeString) outside f-strings' replacement fields; both are nil when the
// lexer gives up.
func lexPython(src []byte) (spans []nonCodeSpan, strs []codeString, ok bool) {
	lx := &pyLexer{src: src}
	if !lx.module() {
		return nil, nil, false
	}
	return lx.spans, lx.strs, true
}

// pyLexer is one pass over a Python source.
type pyLexer struct {
	src   []byte
	pos   int
	spans []nonCodeSpan
	strs  []codeString
	open  [2]int // f-strings open around lx.pos, by quote (0: ", 1: ')
}

// quoteIndex is q's slot in pyLexer.open.
func quoteIndex(q byte) int {
	if q == '"' {
		return 0
	}
	return 1
}

// Byte classes of the lexer's code loop (lexClass).
const (
	clOther = iota
	clBlank
	clLineEnd
	clBackslash
	clHash
	clOpen
	clClose
	clQuote
	clWord
)

// lexClass is each byte's class in code.
var lexClass = func() (t [256]uint8) {
	for c := range 256 {
		switch b := byte(c); {
		case b == ' ' || b == '\t' || b == '\f':
			t[c] = clBlank
		case b == '\n' || b == '\r':
			t[c] = clLineEnd
		case b == '\\':
			t[c] = clBackslash
		case b == '#':
			t[c] = clHash
		case b == '(' || b == '[' || b == '{':
			t[c] = clOpen
		case b == ')' || b == ']' || b == '}':
			t[c] = clClose
		case b == '"' || b == '\'':
			t[c] = clQuote
		case wordStart(b):
			t[c] = clWord
		}
	}
	return t
}()

// module lexes the whole source as code; false when the lexer gives up.
func (lx *pyLexer) module() bool {
	src := lx.src
	depth := 0        // open brackets
	lineStart := true // no token yet on this logical line
	for lx.pos < len(src) {
		switch lexClass[src[lx.pos]] {
		case clBlank:
			lx.pos++
		case clLineEnd:
			lx.pos++
			if depth == 0 {
				lineStart = true
			}
		case clBackslash:
			if !lx.continuation() {
				return false
			}
		case clHash:
			lx.comment()
		case clOpen:
			depth++
			lineStart = false
			lx.pos++
		case clClose:
			if depth--; depth < 0 {
				return false
			}
			lineStart = false
			lx.pos++
		case clQuote, clWord:
			start := lx.pos
			flags, isString := lx.prefix()
			if !isString {
				lineStart = false
				continue
			}
			content := lx.pos + 1 // after the opening quote(s)
			if lx.pos+2 < len(src) && src[lx.pos+1] == src[lx.pos] && src[lx.pos+2] == src[lx.pos] {
				content = lx.pos + 3
			}
			if !lx.str(flags) {
				return false
			}
			switch {
			case lineStart && depth == 0 && flags&strFormat == 0 && lx.statementEnds():
				lx.spans = append(lx.spans, nonCodeSpan{start, lx.pos, spanBareString})
			case flags&strFormat == 0:
				lx.strs = append(lx.strs, codeString{start, content, lx.pos})
			}
			lineStart = false
		default:
			lineStart = false
			lx.pos++
		}
	}
	return depth == 0
}

// continuation steps over a backslash that joins two lines; false when the
// backslash is not followed by a line end (not Python outside a string).
func (lx *pyLexer) continuation() bool {
	src := lx.src
	i := lx.pos + 1
	switch {
	case i < len(src) && src[i] == '\n':
		lx.pos = i + 1
	case i+1 < len(src) && src[i] == '\r' && src[i+1] == '\n':
		lx.pos = i + 2
	case i < len(src) && src[i] == '\r':
		lx.pos = i + 1
	default:
		return false
	}
	return true
}

// comment records the comment at lx.pos (up to, not including, the line
// end) and steps over it.
func (lx *pyLexer) comment() {
	start := lx.pos
	end := len(lx.src)
	if i := bytes.IndexByte(lx.src[start:], '\n'); i >= 0 {
		end = start + i
	}
	if i := bytes.IndexByte(lx.src[start:end], '\r'); i >= 0 {
		end = start + i
	}
	lx.pos = end
	lx.spans = append(lx.spans, nonCodeSpan{start, end, spanComment})
}

// statementEnds reports whether, after the token that ends at lx.pos, only
// blanks and then a line end, a comment or the end of the file follow: the
// token was the statement's last. It does not move lx.pos.
func (lx *pyLexer) statementEnds() bool {
	i := lx.pos
	for i < len(lx.src) && (lx.src[i] == ' ' || lx.src[i] == '\t' || lx.src[i] == '\f') {
		i++
	}
	return i == len(lx.src) || lx.src[i] == '\n' || lx.src[i] == '\r' || lx.src[i] == '#'
}

// String prefix flags.
const (
	strRaw    = 1 << iota // r: a backslash escapes nothing (but still keeps a quote in the string)
	strFormat             // f or t: replacement fields hold code
)

// wordStart reports whether c can start a name (ASCII letters, "_", or any
// byte of a non-ASCII character).
func wordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// prefix reads a name, or a string's prefix and stops at its quote: with a
// quote right after a valid prefix (r, u, b, f, t and their pairs, in either
// case) it reports the prefix's flags and true, lx.pos at the quote;
// otherwise lx.pos is after the name and it returns false.
func (lx *pyLexer) prefix() (int, bool) {
	src := lx.src
	start := lx.pos
	for lx.pos < len(src) && (lexClass[src[lx.pos]] == clWord || src[lx.pos] >= '0' && src[lx.pos] <= '9') {
		lx.pos++
	}
	if lx.pos == len(src) || (src[lx.pos] != '"' && src[lx.pos] != '\'') {
		return 0, false
	}
	flags, seen := 0, ""
	for _, c := range src[start:lx.pos] {
		l := c | 0x20 // lower case
		switch l {
		case 'r':
			flags |= strRaw
		case 'f', 't':
			flags |= strFormat
		case 'u', 'b':
		default:
			return 0, false
		}
		seen += string(rune(l))
	}
	switch seen {
	case "", "r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt":
		return flags, true
	}
	return 0, false
}

// strStops are the bytes a string's scan stops at, by quote (quoteIndex):
// the quote, a backslash, a line end, a brace.
var strStops = func() (t [2][256]bool) {
	for i, q := range []byte{'"', '\''} {
		for _, c := range []byte{q, '\\', '\n', '\r', '{'} {
			t[i][c] = true
		}
	}
	return t
}()

// str steps over the string literal whose opening quote is at lx.pos;
// false when it is not terminated or the lexer gives up inside it.
func (lx *pyLexer) str(flags int) bool {
	src := lx.src
	q := src[lx.pos]
	triple := lx.pos+2 < len(src) && src[lx.pos+1] == q && src[lx.pos+2] == q
	if triple {
		lx.pos += 3
	} else {
		lx.pos++
	}
	stop := &strStops[quoteIndex(q)]
	for lx.pos < len(src) {
		c := src[lx.pos]
		if !stop[c] {
			lx.pos++
			continue
		}
		switch {
		case c == q:
			if !triple {
				lx.pos++
				return true
			}
			if lx.pos+2 < len(src) && src[lx.pos+1] == q && src[lx.pos+2] == q {
				lx.pos += 3
				return true
			}
			lx.pos++
		case c == '\\':
			if flags&strFormat != 0 && lx.pos+1 < len(src) && (src[lx.pos+1] == '{' || src[lx.pos+1] == '}') {
				return false
			}
			if flags&(strFormat|strRaw) == strFormat && lx.pos+2 < len(src) && src[lx.pos+1] == 'N' && src[lx.pos+2] == '{' {
				// \N{NAME}: a named character, not a replacement field.
				end := lx.pos + 3
				for end < len(src) && src[end] != '}' && src[end] != q && src[end] != '\n' {
					end++
				}
				if end == len(src) || src[end] != '}' {
					return false
				}
				lx.pos = end + 1
				continue
			}
			lx.pos += 2 // the escaped byte (a quote, a backslash, a line end) stays in the string
			if lx.pos <= len(src) && src[lx.pos-1] == '\r' && lx.pos < len(src) && src[lx.pos] == '\n' {
				lx.pos++
			}
		case (c == '\n' || c == '\r') && !triple:
			return false // unterminated single-quoted string
		case c == '{' && flags&strFormat != 0:
			if lx.pos+1 < len(src) && src[lx.pos+1] == '{' {
				lx.pos += 2 // a literal "{"
				continue
			}
			lx.pos++
			lx.open[quoteIndex(q)]++
			ok := lx.field(triple)
			lx.open[quoteIndex(q)]--
			if !ok {
				return false
			}
		default:
			lx.pos++
		}
	}
	return false
}

// field steps over an f-string's replacement field, lx.pos just after its
// "{", up to and including its "}": code (names, brackets, nested strings of
// another quote), then an optional "!r"-style conversion and a ":" format
// spec whose own fields nest. triple tells whether the enclosing string is
// triple-quoted; a nested string may not use the quote of any enclosing
// f-string (lx.open).
func (lx *pyLexer) field(triple bool) bool {
	src := lx.src
	depth := 0
	for lx.pos < len(src) {
		c := src[lx.pos]
		switch {
		case c == '}' && depth == 0:
			lx.pos++
			return true
		case c == ':' && depth == 0:
			lx.pos++
			return lx.formatSpec(triple)
		case c == '(' || c == '[' || c == '{':
			depth++
			lx.pos++
		case c == ')' || c == ']' || c == '}':
			if depth--; depth < 0 {
				return false
			}
			lx.pos++
		case c == '#' || c == '\\':
			return false // a comment or a backslash in a field: not followed
		case (c == '\n' || c == '\r') && !triple:
			return false
		case c == '"' || c == '\'' || wordStart(c):
			flags, isString := lx.prefix()
			if !isString {
				continue
			}
			if lx.open[quoteIndex(src[lx.pos])] > 0 {
				return false // an enclosing quote: lexed differently before Python 3.12
			}
			if !lx.str(flags) {
				return false
			}
		default:
			lx.pos++
		}
	}
	return false
}

// formatSpec steps over a replacement field's format spec, lx.pos just after
// its ":", up to and including the field's "}"; its own fields nest.
func (lx *pyLexer) formatSpec(triple bool) bool {
	src := lx.src
	for lx.pos < len(src) {
		c := src[lx.pos]
		switch {
		case c == '}':
			lx.pos++
			return true
		case c == '{':
			lx.pos++
			if !lx.field(triple) {
				return false
			}
		case c == '"' || c == '\'' || c == '\\' || c == '\n' || c == '\r':
			return false
		default:
			lx.pos++
		}
	}
	return false
}
