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
// blanks, newlines, line continuations and comments, then `(`. A part ending
// in `\=` must be followed, after the same, by a keyword argument's `=` (one
// `=`, not `==`): `\bdevice_map\=` matches `device_map="auto"` and
// `device_map = 0`, not `"device_map" in cfg` or `device_map == x`.
// `\bcuda\b` matches `torch.cuda` and `"cuda:0"`, not `is_cuda`;
// `\bpipeline\( & \bdevice` needs a call of pipeline and a word starting
// with device.
//
// A part starting with `\q` (`\qcuda`) may count inside a string literal
// only where it opens it: the pipeline's lexical pre-check counts a match
// inside a string literal of code that is not an f-string only when the
// match starts the literal's content (right after its opening quotes) and
// a quote or ":" follows it (StringOpens). `\qcuda` counts `torch.cuda`,
// `is_cuda`, `"cuda"`, `'cuda:0'` and any match in an f-string, not
// `"on cuda"`, `"cuda is missing"` or `"cuda_rng"`. A part marked `\m` after
// any `\q` (`\m\bapex\b`) starts a module name: the byte before the match
// is not "." either, so `from ..quantizers.bitsandbytes import x` does not
// match `\m\bbitsandbytes\b` (a relative import names the package's own
// module). A rule may mark a part so only when every
// string literal it reports on (or reads to decide a finding) holds the part
// that way, and every other source of the part it reads is code; its
// declaration says why. Here, as in the pre-check's other counts, the mark
// is dropped: MayReport is the plain superset.
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
		text, before, after, follow := NeedlePart(part)
		if text != "" && !partMatch(src, text, before, ModuleStart(part), after, follow) {
			return false
		}
	}
	return true
}

// NeedlePart splits the `\q` mark (see StringStart), the `\b` anchors and
// the `\(` call or `\=` keyword suffix off one part of a needle.
func NeedlePart(part string) (text string, before, after bool, follow Follow) {
	text, _ = strings.CutPrefix(part, `\q`)
	text, _ = strings.CutPrefix(text, `\m`)
	if t, ok := strings.CutPrefix(text, `\b`); ok {
		text, before = t, true
	}
	if t, ok := strings.CutSuffix(text, `\(`); ok && t != "" {
		text, follow = t, FollowCall
	} else if t, ok := strings.CutSuffix(text, `\=`); ok && t != "" {
		text, follow = t, FollowKwarg
	} else if t, ok := strings.CutSuffix(text, `\b`); ok && t != "" {
		text, after = t, true
	}
	return text, before, after, follow
}

// Follow is what a needle part needs after its match: nothing, a call's
// "(" (`\(`) or a keyword argument's "=" (`\=`).
type Follow uint8

const (
	FollowNone  Follow = iota
	FollowCall         // `\(`: CallFollows
	FollowKwarg        // `\=`: KwargFollows
)

// OK reports whether a match ending at at has what f needs after it.
func (f Follow) OK(src []byte, at int) bool {
	switch f {
	case FollowCall:
		return CallFollows(src, at)
	case FollowKwarg:
		return KwargFollows(src, at)
	}
	return true
}

// ModuleStart reports whether a part of a needle carries the `\m` mark: the
// byte before a match must not be "." (nor, with `\b`, a word byte).
func ModuleStart(part string) bool {
	t, _ := strings.CutPrefix(part, `\q`)
	return strings.HasPrefix(t, `\m`)
}

// StringStart reports whether a part of a needle carries the `\q` mark: a
// match inside a string literal counts only where it opens the literal's
// content and StringOpens.
func StringStart(part string) bool { return strings.HasPrefix(part, `\q`) }

// StringOpens reports whether a `\q` part's match at the start of a string
// literal's content, ending at at, counts: a quote (the literal's end, or a
// quote inside a triple-quoted one) or ":" follows it ("cuda", "cuda:0").
func StringOpens(src []byte, at int) bool {
	return at < len(src) && (src[at] == '"' || src[at] == '\'' || src[at] == ':')
}

// CallFollows reports whether src[at:] starts, after blanks, newlines, line
// continuations and comments, with "(".
func CallFollows(src []byte, at int) bool {
	at = skipBlanks(src, at)
	return at < len(src) && src[at] == '('
}

// skipBlanks returns the offset of the first byte at or after at that is not
// a blank, a newline, a line continuation's backslash or part of a comment.
func skipBlanks(src []byte, at int) int {
	for at < len(src) {
		switch src[at] {
		case ' ', '\t', '\n', '\r', '\f', '\\':
			at++
		case '#':
			for at < len(src) && src[at] != '\n' {
				at++
			}
		default:
			return at
		}
	}
	return at
}

// KwargFollows reports whether src[at:] starts, after blanks, newlines,
// line continuations and comments, with a single "=" (not "==").
func KwargFollows(src []byte, at int) bool {
	at = skipBlanks(src, at)
	return at < len(src) && src[at] == '=' && (at+1 == len(src) || src[at+1] != '=')
}

func partMatch(src []byte, text string, before, module, after bool, follow Follow) bool {
	t := []byte(text)
	for off := 0; ; {
		i := bytes.Index(src[off:], t)
		if i < 0 {
			return false
		}
		s, e := off+i, off+i+len(t)
		if (!before || s == 0 || !WordByte(src[s-1])) && (!module || s == 0 || src[s-1] != '.') && (!after || e == len(src) || !WordByte(src[e])) &&
			follow.OK(src, e) {
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
