package pipeline

import "github.com/pallasify/pallasify/transforms/rule"

// prefilter decides, in one pass over a file's bytes, which rules can report
// anything on it. A rule with Needles can only report on a file containing at
// least one of them; a rule without Needles always runs. The scan is an
// Aho-Corasick automaton compiled to a dense byte DFA, so its cost does not
// grow with the number of needles.
type prefilter struct {
	rules  []*rule.Rule
	always []bool  // rule i has no needles
	delta  []int32 // state*256 + byte -> state
	out    [][]int // state -> rule indexes whose needle ends here (including via suffix links)
	any    bool    // some rule has needles
}

func newPrefilter(rules []*rule.Rule) *prefilter {
	pf := &prefilter{rules: rules, always: make([]bool, len(rules))}
	type node struct {
		next map[byte]int32
		fail int32
		out  []int
	}
	nodes := []node{{next: map[byte]int32{}}}
	for i, r := range rules {
		if len(r.Needles) == 0 {
			pf.always[i] = true
			continue
		}
		for _, nd := range r.Needles {
			if nd == "" {
				pf.always[i] = true
				continue
			}
			pf.any = true
			s := int32(0)
			for j := 0; j < len(nd); j++ {
				c := nd[j]
				nx, ok := nodes[s].next[c]
				if !ok {
					nodes = append(nodes, node{next: map[byte]int32{}})
					nx = int32(len(nodes) - 1)
					nodes[s].next[c] = nx
				}
				s = nx
			}
			nodes[s].out = append(nodes[s].out, i)
		}
	}
	n := len(nodes)
	pf.delta = make([]int32, n*256)
	pf.out = make([][]int, n)
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
		pf.out[s] = append(append([]int(nil), nodes[s].out...), pf.out[f]...)
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
	return pf
}

// select returns the rules that may report on src, in their original order;
// nil when none can.
func (pf *prefilter) selectRules(src []byte) []*rule.Rule {
	if !pf.any {
		return pf.rules
	}
	hit := make([]bool, len(pf.rules))
	copy(hit, pf.always)
	remaining := 0
	for i := range pf.rules {
		if !hit[i] {
			remaining++
		}
	}
	s := int32(0)
	delta := pf.delta
	for _, c := range src {
		s = delta[int(s)<<8|int(c)]
		if o := pf.out[s]; o != nil {
			for _, i := range o {
				if !hit[i] {
					hit[i] = true
					remaining--
				}
			}
			if remaining == 0 {
				break
			}
		}
	}
	var sel []*rule.Rule
	for i, r := range pf.rules {
		if hit[i] {
			sel = append(sel, r)
		}
	}
	return sel
}
