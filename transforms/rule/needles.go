package rule

import (
	"bytes"
	"strings"
)

// The needle language of Rule.Needles. A needle is one or more parts joined
// by " & ", all of which must occur somewhere in the file; a part is a byte
// string, optionally anchored with `\b` at its start and/or end: there the
// byte before (after) the match must not be an ASCII letter, digit or
// underscore (or the match starts or ends the file). A part ending in `\(`
// must be followed by a call's opening parenthesis: after the match only
// blanks, newlines, line continuations and comments, then `(`. `\bcuda\b`
// matches `torch.cuda` and `"cuda:0"`, not `is_cuda`; `\bpipeline\( &
// \bdevice` needs a call of pipeline and a word starting with device.
//
// MayReport is the plain reference implementation; the pipeline answers the
// same question for every rule at once with one automaton (and its tests
// compare the two).

// MayReport reports whether r can report on src according to its Needles:
// true when r has none, or when one of them matches.
func (r *Rule) MayReport(src []byte) bool {
	if len(r.Needles) == 0 {
		return true
	}
	for _, nd := range r.Needles {
		if NeedleMatch(src, nd) {
			return true
		}
	}
	return false
}

// NeedleMatch reports whether src matches one needle. A needle without any
// non-empty part matches everything.
func NeedleMatch(src []byte, needle string) bool {
	for _, part := range strings.Split(needle, " & ") {
		text, before, after, call := NeedlePart(part)
		if text != "" && !partMatch(src, text, before, after, call) {
			return false
		}
	}
	return true
}

// NeedlePart splits the `\b` anchors and the `\(` call suffix off one part
// of a needle.
func NeedlePart(part string) (text string, before, after, call bool) {
	text = part
	if t, ok := strings.CutPrefix(text, `\b`); ok {
		text, before = t, true
	}
	if t, ok := strings.CutSuffix(text, `\(`); ok && t != "" {
		text, call = t, true
	} else if t, ok := strings.CutSuffix(text, `\b`); ok && t != "" {
		text, after = t, true
	}
	return text, before, after, call
}

// CallFollows reports whether src[at:] starts, after blanks, newlines, line
// continuations and comments, with "(".
func CallFollows(src []byte, at int) bool {
	for at < len(src) {
		switch c := src[at]; c {
		case ' ', '\t', '\n', '\r', '\f', '\\':
			at++
		case '#':
			for at < len(src) && src[at] != '\n' {
				at++
			}
		default:
			return c == '('
		}
	}
	return false
}

func partMatch(src []byte, text string, before, after, call bool) bool {
	t := []byte(text)
	for off := 0; ; {
		i := bytes.Index(src[off:], t)
		if i < 0 {
			return false
		}
		s, e := off+i, off+i+len(t)
		if (!before || s == 0 || !WordByte(src[s-1])) && (!after || e == len(src) || !WordByte(src[e])) &&
			(!call || CallFollows(src, e)) {
			return true
		}
		off = s + 1
	}
}

// WordByte reports whether c can continue an identifier (ASCII only: a
// non-ASCII byte counts as a boundary, which can only let more files pass).
func WordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
