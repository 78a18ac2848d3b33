package kit

import (
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Report reports f after making its edits fit where they land: text
// inserted inside an f-string's replacement field uses the other quote
// character, since before Python 3.12 a replacement field cannot reuse the
// f-string's own quote (f"{g("x")}" is a syntax error).
//
// On the portable target a fix inside a test that compares CUDA with the
// CPU (CrossChecks) is dropped: the finding stays, for a human. So is a fix
// inside a CUDAOnlyGuard's CUDA branch, on both targets: that branch stays
// CUDA-only, as a whole; a fixable finding in the guard's condition is not
// reported (the guard's cuda-only-guard finding, PCU012, covers it).
func Report(p *rule.Pass, f rule.Finding) {
	if f.Fix != nil {
		if g, ok := inCUDAOnlyGuard(p, f); ok {
			if g.Ranges[0][0] <= f.Start && f.End <= g.Ranges[0][1] {
				return // the guard's own check: its cuda-only-guard finding says why it stays
			}
			f.Fix = nil
			f.Message += g.Note()
		}
	}
	if f.Fix != nil && p.Target == rule.Portable && InCrossCheck(p, f.Start) {
		f.Fix = nil
		f.Message += CrossCheckNote
	}
	if f.Fix != nil {
		for i, e := range f.Fix.Edits {
			if !strings.ContainsAny(e.New, `"'`) {
				continue
			}
			if q := fieldQuote(p, e.Start, e.End); q != "" {
				f.Fix.Edits[i].New = requote(e.New, q)
			}
		}
	}
	p.Report(f)
}

// inCUDAOnlyGuard returns the CUDAOnlyGuard f's site or one of its fix's
// edits lies in.
func inCUDAOnlyGuard(p *rule.Pass, f rule.Finding) (CUDAOnlyGuard, bool) {
	if g, ok := InCUDAOnlyGuard(p, f.Start, f.End); ok {
		return g, true
	}
	for _, e := range f.Fix.Edits {
		if g, ok := InCUDAOnlyGuard(p, e.Start, e.End); ok {
			return g, true
		}
	}
	return CUDAOnlyGuard{}, false
}

// fieldQuote returns the quote character of the innermost f-string whose
// replacement field holds [start, end), or "".
func fieldQuote(p *rule.Pass, start, end int) string {
	quote := ""
	n := p.Tree.Root()
	for {
		// The last child starting at or before start (children are in
		// source order), found by binary search: few cgo calls per level.
		cnt := int(n.ChildCount())
		i := sort.Search(cnt, func(i int) bool { return Start(n.Child(i)) > start }) - 1
		var next *ts.Node
		if i >= 0 {
			if c := n.Child(i); end <= End(c) && Start(c) < End(c) {
				next = c
			}
		}
		if next == nil {
			return quote
		}
		if next.Type() == "interpolation" && n.Type() == "string" && n.NamedChildCount() > 0 {
			st := p.Text(n.NamedChild(0))
			switch {
			case strings.Contains(st, `"`):
				quote = `"`
			case strings.Contains(st, `'`):
				quote = `'`
			}
		}
		n = next
	}
}

// requote swaps the quote characters of the string literals in text when
// they are the enclosing f-string's quote q.
func requote(text, q string) string {
	other := `'`
	if q == `'` {
		other = `"`
	}
	if strings.Contains(text, other) {
		return text // mixed quotes: leave as is (the engine refuses a result that does not parse)
	}
	return strings.ReplaceAll(text, q, other)
}
