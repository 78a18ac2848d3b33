package ts

import (
	"context"
	"testing"
)

// TestFlatMatchesWalk checks the flattened copy against a cursor walk: the
// same nodes in the same order with the same types and ranges, and Next
// pointing just past each subtree.
func TestFlatMatchesWalk(t *testing.T) {
	srcs := map[string]string{
		"empty":  "",
		"module": "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.cuda(0) + f\"{x!r}\"  # c\n\nm = Net().to(\"cuda\")\n",
		"broken": "def f(:\n    x = [1, 2\nprint('a')\n",
		"nested": "a = [[[(1, {2: 3})]]]\n@dec(x)\nasync def g():\n    await h(*a, **k)\n",
	}
	p := NewParser(Python)
	defer p.Close()
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			tree, err := p.Parse(context.Background(), []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			var want []*Node
			Walk(tree.Root(), func(n *Node) bool { want = append(want, n); return true })
			f := tree.Flat()
			if f.Len() != len(want) {
				t.Fatalf("flat has %d nodes, walk %d", f.Len(), len(want))
			}
			for i, n := range want {
				if f.Nodes[i] != n || f.Types[i] != n.Type() {
					t.Fatalf("node %d: flat %s, walk %s", i, f.Types[i], n.Type())
				}
				// Next is the first later node that does not lie inside n.
				j := i + 1
				for j < len(want) && isDescendant(want[j], n) {
					j++
				}
				if int(f.Next[i]) != j {
					t.Fatalf("node %d (%s): Next %d, want %d", i, f.Types[i], f.Next[i], j)
				}
			}
			// Walk with pruning visits what ts.Walk with the same pruning visits.
			var got, exp []string
			skip := func(typ string) bool { return typ != "string" && typ != "argument_list" }
			f.Walk(func(i int) bool { got = append(got, f.Types[i]); return skip(f.Types[i]) })
			Walk(tree.Root(), func(n *Node) bool { exp = append(exp, n.Type()); return skip(n.Type()) })
			if len(got) != len(exp) {
				t.Fatalf("pruned walk: %d nodes, want %d", len(got), len(exp))
			}
			for i := range got {
				if got[i] != exp[i] {
					t.Fatalf("pruned walk node %d: %s, want %s", i, got[i], exp[i])
				}
			}
		})
	}
}

func isDescendant(n, anc *Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p == anc {
			return true
		}
	}
	return false
}
