package kit

import (
	"bytes"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Hits is the set of source offsets where a rule's words occur. Walking only
// the subtrees that hold a hit makes a rule's cost proportional to what it
// can match, not to the file: most files (and most of any file) never
// mention "cuda".
type Hits struct {
	at []int // sorted start offsets of every occurrence
}

// Needles returns words extended by every name the module imports whose
// qualified target contains one of them ("DDP" for
// `from torch.nn.parallel import DistributedDataParallel as DDP`, "tc" for
// `import torch.cuda as tc`), so aliases are found too.
func Needles(p *rule.Pass, words ...string) []string {
	out := append([]string(nil), words...)
	add := func(local, target string) {
		for _, w := range words {
			if strings.Contains(target, w) && !strings.Contains(local, w) {
				out = append(out, local)
				return
			}
		}
	}
	for local, target := range p.Imports.Names {
		add(local, target)
	}
	for local, target := range p.Imports.Modules {
		add(local, target)
	}
	sort.Strings(out[len(words):]) // deterministic
	return out
}

// FindHits finds every occurrence of words (not extended; see Needles).
func FindHits(src []byte, words []string) Hits {
	var at []int
	for _, w := range words {
		if w == "" {
			continue
		}
		b := []byte(w)
		for off := 0; ; {
			i := bytes.Index(src[off:], b)
			if i < 0 {
				break
			}
			at = append(at, off+i)
			off += i + 1
		}
	}
	sort.Ints(at)
	return Hits{at: at}
}

// Empty reports whether nothing matched.
func (h Hits) Empty() bool { return len(h.at) == 0 }

// In reports whether a hit starts inside [start, end).
func (h Hits) In(start, end int) bool {
	i := sort.SearchInts(h.at, start)
	return i < len(h.at) && h.at[i] < end
}

// WalkHits walks p's tree like ts.Walk, but skips every subtree that holds
// no occurrence of the words (extended with Needles). fn returning false
// also skips a node's children. The walk stops when the run is cancelled
// (rule.Pass.Cancelled).
func WalkHits(p *rule.Pass, words []string, fn func(*ts.Node) bool) {
	walkHits(p, words, func(f *ts.Flat, i int) bool { return fn(f.Nodes[i]) })
}

// walkHits is WalkHits over the tree's flattened copy: fn gets the node's
// index, so callers can read its type without a call into C.
func walkHits(p *rule.Pass, words []string, fn func(f *ts.Flat, i int) bool) {
	h := FindHits(p.Src, Needles(p, words...))
	if h.Empty() {
		return
	}
	f := p.Tree.Flat()
	for i, steps := 0, 0; i < len(f.Nodes); steps++ {
		if steps%1024 == 1023 && p.Cancelled() {
			return // the engine drops the rule's findings
		}
		if h.In(f.Range(i)) && fn(f, i) {
			i++
		} else {
			i = int(f.Next[i])
		}
	}
}

// CallsWith visits the calls whose text holds one of words (or an import
// alias of one), skipping comments.
func CallsWith(p *rule.Pass, words []string, fn func(call *ts.Node)) {
	walkHits(p, words, func(f *ts.Flat, i int) bool {
		switch f.Types[i] {
		case "comment":
			return false
		case "call":
			fn(f.Nodes[i])
		}
		return true
	})
}
