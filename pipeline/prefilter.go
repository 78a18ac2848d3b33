package pipeline

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
)

// prefilter decides, in one pass over a file's bytes, which rules can report
// anything on it. A rule with Needles can only report on a file containing at
// least one of them; a rule without Needles always runs. The scan is an
// Aho-Corasick automaton compiled to a dense byte DFA, so its cost does not
// grow with the number of needles.
//
// A needle may need several strings, all somewhere in the file, joined by
// " & ": `\bpipeline\b & \bdevice` passes a file that calls pipeline(...)
// and names a device. Each part may be anchored at a word boundary with `\b`
// at its start, its end or both (`\bflash_attn\b`): the byte before (after)
// the match must not be an ASCII letter, digit or underscore, or the match
// must start (end) the file. So `\bcuda\b` matches `torch.cuda` and
// `"cuda:0"`, not `is_cuda` or `cudaMalloc`. A part ending in `\(` must be
// called: `\bpipeline\(` matches `pipeline(` and `pipeline \\\n  (`, not
// `import pipeline`. The language is rule.NeedleMatch's.
//
// Besides the rules, the prefilter answers for extra needle sets (the kernel
// discovery's, kernels.PythonNeedles): Select's second result says which of
// them the file contains.
type prefilter struct {
	rules  []*rule.Rule
	always []bool   // rule i has no needles
	delta  []int32  // state*256 + byte -> state
	out    [][]hit  // state -> needle parts that end here (including via suffix links)
	owner  []int    // needle -> its rule's index, or len(rules)+k for extra set k
	full   []uint64 // needle -> the mask of all its parts
	any    bool     // some rule has needles
	sets   int      // extra needle sets
	// longest is the length of the longest needle part.
	longest int
	// firstOut is the first state where a needle part ends (renumber).
	firstOut int32
}

// overlaps reports whether [start, end) overlaps one of spans (sorted,
// disjoint).
func overlaps(spans []nonCodeSpan, start, end int) bool {
	for _, sp := range spans {
		if sp.start >= end {
			return false
		}
		if sp.end > start {
			return true
		}
	}
	return false
}

// opensString reports whether the match [start, end) lies outside every
// code string of strs (sorted, disjoint), or starts one's content and
// rule.StringOpens.
func opensString(src []byte, strs []codeString, start, end int) bool {
	for _, cs := range strs {
		if cs.start >= end {
			return true
		}
		if cs.end > start {
			return start == cs.content && rule.StringOpens(src, end)
		}
	}
	return true
}

// hit is one part of a needle ending at a DFA state: which needle, which
// part (a bit of the needle's mask), its length and its boundary anchors.
type hit struct {
	needle        int
	bit           uint64
	n             int
	before, after bool        // needs a word boundary before / after the match
	follow        rule.Follow // needs a call's "(" or a keyword's "=" after the match
	opens         bool        // inside a code string, must open its content (rule.StringStart)
	module        bool        // the byte before the match is not "." (rule.ModuleStart)
}

// needleParts splits a needle into the strings that must all occur: parts
// are joined by " & " (`\bpipeline\b & \bdevice`); at most 64.
func needleParts(nd string) []string { // the language is rule.NeedleMatch's
	var parts []string
	for _, p := range strings.Split(nd, " & ") {
		if text, _, _, _ := rule.NeedlePart(p); text != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) > 64 {
		parts = parts[:64]
	}
	return parts
}

func newPrefilter(rules []*rule.Rule, sets ...[]string) *prefilter {
	pf := &prefilter{rules: rules, always: make([]bool, len(rules)), sets: len(sets)}
	type node struct {
		next map[byte]int32
		fail int32
		out  []hit
	}
	nodes := []node{{next: map[byte]int32{}}}
	// add enters the parts of one needle; false when it has none.
	add := func(owner int, nd string) bool {
		parts := needleParts(nd)
		if len(parts) == 0 {
			return false
		}
		id := len(pf.owner)
		pf.owner = append(pf.owner, owner)
		pf.full = append(pf.full, 1<<len(parts)-1)
		for b, part := range parts {
			text, before, after, follow := rule.NeedlePart(part)
			pf.longest = max(pf.longest, len(text))
			s := int32(0)
			for j := 0; j < len(text); j++ {
				c := text[j]
				nx, ok := nodes[s].next[c]
				if !ok {
					nodes = append(nodes, node{next: map[byte]int32{}})
					nx = int32(len(nodes) - 1)
					nodes[s].next[c] = nx
				}
				s = nx
			}
			nodes[s].out = append(nodes[s].out, hit{needle: id, bit: 1 << b, n: len(text), before: before, after: after, follow: follow,
				opens: rule.StringStart(part), module: rule.ModuleStart(part)})
		}
		return true
	}
	for i, r := range rules {
		if len(r.Needles) == 0 {
			pf.always[i] = true
			continue
		}
		for _, nd := range r.Needles {
			if !add(i, nd) {
				pf.always[i] = true // an empty needle: always run
				continue
			}
			pf.any = true
		}
	}
	for k, set := range sets {
		for _, nd := range set {
			add(len(rules)+k, nd)
		}
	}
	n := len(nodes)
	pf.delta = make([]int32, n*256)
	pf.out = make([][]hit, n)
	// Breadth-first construction of failure links and the dense table.
	queue := make([]int32, 0, n)
	for c := 0; c < 256; c++ {
		if nx, ok := nodes[0].next[byte(c)]; ok {
			nodes[nx].fail = 0
			pf.delta[c] = nx
			queue = append(queue, nx)
		}
	}
	pf.out[0] = nodes[0].out
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := nodes[s].fail
		pf.out[s] = append(append([]hit(nil), nodes[s].out...), pf.out[f]...)
		for c := 0; c < 256; c++ {
			if nx, ok := nodes[s].next[byte(c)]; ok {
				nodes[nx].fail = pf.delta[int(f)*256+c]
				pf.delta[int(s)*256+c] = nx
				queue = append(queue, nx)
			} else {
				pf.delta[int(s)*256+c] = pf.delta[int(f)*256+c]
			}
		}
	}
	pf.renumber()
	return pf
}

// renumber orders the states so that those where a needle part ends come
// last, from pf.firstOut on: the scan then tests the state's number, not its
// list of hits, for every byte. The start state (no hits: a part is never
// empty) stays 0.
func (pf *prefilter) renumber() {
	n := len(pf.out)
	perm := make([]int32, n) // old state -> new
	next := int32(0)
	for s := range n {
		if len(pf.out[s]) == 0 {
			perm[s], next = next, next+1
		}
	}
	pf.firstOut = next
	for s := range n {
		if len(pf.out[s]) > 0 {
			perm[s], next = next, next+1
		}
	}
	delta, out := make([]int32, n*256), make([][]hit, n)
	for s := range n {
		ns := int(perm[s])
		out[ns] = pf.out[s]
		for c := range 256 {
			delta[ns*256+c] = perm[pf.delta[s*256+c]]
		}
	}
	pf.delta, pf.out = delta, out
}

// selectRules returns the rules that may report on src, in their original
// order; nil when none can.
func (pf *prefilter) selectRules(src []byte) []*rule.Rule {
	sel, _ := pf.Select(src)
	return sel
}

// Select returns the rules that may report on src (in their original order;
// nil when none can) and, for each extra needle set, whether src contains one
// of its needles.
func (pf *prefilter) Select(src []byte) ([]*rule.Rule, []bool) {
	return pf.SelectCode(src, nil, nil)
}

// selectPython is Select for a Python source after the lexical pre-check
// (prefilter_lex.go): a needle counts only where it matches outside the
// file's comments and bare string statements, and a part marked `\q` inside
// a code string only where it opens it. That holds for the extra sets too:
// kernel discovery finds a kernel only through code (an import of triton, a
// call of load_inline or CUDAExtension, a RawKernel), so a file naming triton
// only in its comments and docstrings holds none. It answers as SelectCode
// with the lexer's spans does.
//
// The file is scanned once, as it is, and each match of a needle part whose
// anchors hold is kept. The pre-check only takes matches away, so when the
// kept matches complete no needle (most files), the lexer is not run;
// otherwise the kept matches are checked against its spans.
func (pf *prefilter) selectPython(src []byte) ([]*rule.Rule, []bool) {
	found := make([]bool, len(pf.rules)+pf.sets)
	copy(found, pf.always)
	if !pf.any {
		for i := range pf.rules {
			found[i] = true
		}
	}
	mask := make([]uint64, len(pf.owner))
	var kept []match
	pf.scan(src, func(pos int, s int32) {
		for i := range pf.out[s] {
			h := &pf.out[s][i]
			o := pf.owner[h.needle]
			if found[o] || !h.anchored(src, pos+1) {
				continue
			}
			mask[h.needle] |= h.bit
			kept = append(kept, match{pos + 1, h})
		}
	})
	complete := false // some needle has all its parts among the kept matches
	for nd, m := range mask {
		complete = complete || m == pf.full[nd]
		mask[nd] = 0 // from here on, the matches the pre-check counts
	}
	if complete {
		spans, strs, _ := lexPython(src)
		k, q := 0, 0 // as in SelectCode
		for _, m := range kept {
			h, start := m.h, m.end-m.h.n
			o := pf.owner[h.needle]
			if found[o] || mask[h.needle]&h.bit != 0 {
				continue
			}
			if len(spans) > 0 {
				for k < len(spans) && spans[k].end <= m.end-pf.longest {
					k++
				}
				if overlaps(spans[k:], start, m.end) {
					continue
				}
			}
			if h.opens && len(strs) > 0 {
				for q < len(strs) && strs[q].end <= m.end-pf.longest {
					q++
				}
				if !opensString(src, strs[q:], start, m.end) {
					continue
				}
			}
			if mask[h.needle] |= h.bit; mask[h.needle] == pf.full[h.needle] {
				found[o] = true
			}
		}
	}
	var sel []*rule.Rule
	for i, r := range pf.rules {
		if found[i] {
			sel = append(sel, r)
		}
	}
	return sel, found[len(pf.rules):]
}

// scan runs the automaton over src and calls at(pos, s) at each position
// pos where it enters a state s at which a needle part ends, in the order of
// pos. Each byte's step is a load that depends on the one before, so one walk
// runs at the table's load latency; a file of some length is walked as two
// halves at once, the second from state 0 at longest-1 bytes before the
// middle, so it knows every part ending after the middle, and its matches
// are passed on after the first half's.
func (pf *prefilter) scan(src []byte, at func(pos int, s int32)) {
	delta, firstOut, n, l := pf.delta, pf.firstOut, len(src), pf.longest
	if l == 0 || n < 4*l+64 {
		s := int32(0)
		for pos := 0; pos < n; pos++ {
			if s = delta[int(s)<<8|int(src[pos])]; s >= firstOut {
				at(pos, s)
			}
		}
		return
	}
	mid := (n + l - 1) / 2 // the first half is src[:mid]; the second, src[mid-l+1:], is as long or one byte longer
	first, second := src[:mid], src[mid-l+1:]
	two := second[:len(first)]
	type later struct {
		pos int
		s   int32
	}
	var hits []later
	s1, s2 := int32(0), int32(0)
	for i := range first {
		s1 = delta[int(s1)<<8|int(first[i])]
		s2 = delta[int(s2)<<8|int(two[i])]
		if s1|s2 < firstOut { // neither is at or past firstOut
			continue
		}
		if s1 >= firstOut {
			at(i, s1)
		}
		if s2 >= firstOut && i >= l-1 { // ends at or after mid: the second half's
			hits = append(hits, later{mid - l + 1 + i, s2})
		}
	}
	for _, h := range hits {
		at(h.pos, h.s)
	}
	for pos := mid - l + 1 + len(two); pos < n; pos++ {
		if s2 = delta[int(s2)<<8|int(src[pos])]; s2 >= firstOut {
			at(pos, s2)
		}
	}
}

// match is a match of a rule's needle part whose anchors hold, ending at
// end (selectPython).
type match struct {
	end int
	h   *hit
}

// anchored reports whether a match of h ending at end has its word
// boundaries and, if it needs one, a call's "(" or a keyword's "=" after it.
func (h *hit) anchored(src []byte, end int) bool {
	if h.before && end-h.n > 0 && rule.WordByte(src[end-h.n-1]) {
		return false
	}
	if h.module && end-h.n > 0 && src[end-h.n-1] == '.' {
		return false
	}
	if h.after && end < len(src) && rule.WordByte(src[end]) {
		return false
	}
	return h.follow.OK(src, end)
}

// SelectCode is Select where a needle counts only if its match does not
// overlap one of the skip spans (sorted, disjoint), and a part marked `\q`
// (rule.StringStart) that lies inside one of the code strings strs (sorted,
// disjoint) only if it starts the string's content and rule.StringOpens; the
// word boundaries and the call check around a match read src as it is.
func (pf *prefilter) SelectCode(src []byte, skip []nonCodeSpan, strs []codeString) ([]*rule.Rule, []bool) {
	owners := len(pf.rules) + pf.sets
	found := make([]bool, owners)
	copy(found, pf.always)
	remaining := 0
	for i := range found {
		if !found[i] && (i >= len(pf.rules) || pf.any) {
			remaining++
		}
	}
	if !pf.any {
		// No rule has needles: every rule runs; only the sets are scanned.
		for i := range pf.rules {
			found[i] = true
		}
	}
	mask := make([]uint64, len(pf.owner))
	s := int32(0)
	delta, firstOut := pf.delta, pf.firstOut
	k := 0 // skip spans before k end before any match that ends at pos can start
	q := 0 // likewise for strs
	for pos := 0; pos < len(src) && remaining > 0; pos++ {
		if s = delta[int(s)<<8|int(src[pos])]; s < firstOut {
			continue
		}
		for _, h := range pf.out[s] {
			o := pf.owner[h.needle]
			if found[o] || mask[h.needle]&h.bit != 0 {
				continue
			}
			if len(skip) > 0 {
				for k < len(skip) && skip[k].end <= pos+1-pf.longest {
					k++
				}
				if overlaps(skip[k:], pos+1-h.n, pos+1) {
					continue // the match overlaps a comment or a bare string
				}
			}
			if h.opens && o < len(pf.rules) && len(strs) > 0 {
				for q < len(strs) && strs[q].end <= pos+1-pf.longest {
					q++
				}
				if !opensString(src, strs[q:], pos+1-h.n, pos+1) {
					continue // inside a code string, not at its start
				}
			}
			if h.before && pos+1-h.n > 0 && rule.WordByte(src[pos-h.n]) {
				continue
			}
			if h.module && pos+1-h.n > 0 && src[pos-h.n] == '.' {
				continue
			}
			if h.after && pos+1 < len(src) && rule.WordByte(src[pos+1]) {
				continue
			}
			if !h.follow.OK(src, pos+1) {
				continue
			}
			if mask[h.needle] |= h.bit; mask[h.needle] == pf.full[h.needle] {
				found[o] = true
				remaining--
			}
		}
	}
	var sel []*rule.Rule
	for i, r := range pf.rules {
		if found[i] {
			sel = append(sel, r)
		}
	}
	return sel, found[len(pf.rules):]
}
