package ts

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"
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
				if !f.Nodes[i].Equal(n) || f.Types[i] != n.Type() {
					t.Fatalf("node %d: flat %s, walk %s", i, f.Types[i], n.Type())
				}
				if s, e := f.Range(i); s != int(n.StartByte()) || e != int(n.EndByte()) {
					t.Fatalf("node %d: Range [%d,%d), want [%d,%d)", i, s, e, n.StartByte(), n.EndByte())
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

// TestIndexMatchesFlat checks the index (a walk of the flattened tree)
// against the same list found by a tree-sitter query in C, on the repository's Python
// sources and a few hand-written cases (f-string calls, nested calls,
// decorators, comments).
func TestIndexMatchesFlat(t *testing.T) {
	srcs := append(handIndexSources(), repoPythonSources(t, 400)...)
	p := NewParser(Python)
	defer p.Close()
	for k, src := range srcs {
		tree, err := p.Parse(context.Background(), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		got, want := tree.Index(), queryIndex(t, tree)
		if len(got.Nodes) != len(want.Nodes) {
			t.Errorf("source %d: index has %d nodes, flat walk %d", k, len(got.Nodes), len(want.Nodes))
		} else {
			for i := range got.Nodes {
				if !got.Nodes[i].Equal(want.Nodes[i]) || got.Types[i] != want.Types[i] || got.Types[i] != got.Nodes[i].Type() {
					t.Errorf("source %d: node %d is %s %q, want %s %q", k, i, got.Types[i], Text(got.Nodes[i], tree.Src), want.Types[i], Text(want.Nodes[i], tree.Src))
					break
				}
			}
		}
		tree.Close()
	}
}

// TestFlatChildMatchesChildByFieldName checks Flat.Child against
// Node.ChildByFieldName for every node of the repository's Python sources
// and the hand-written cases: for every field of the grammar a child of the
// node is in, and for the fields the rules ask for.
func TestFlatChildMatchesChildByFieldName(t *testing.T) {
	srcs := append(handIndexSources(), repoPythonSources(t, 150)...)
	asked := []string{"function", "arguments", "object", "attribute", "name", "value", "left", "right", "alias",
		"module_name", "body", "condition", "consequence", "alternative", "definition", "superclasses"}
	byID := map[uint16]string{}
	for name, id := range fieldIDs[Python]() {
		byID[id] = name
	}
	for _, name := range asked {
		if fieldID(Python, name) == 0 {
			t.Fatalf("field %s unknown to the Python grammar", name)
		}
	}
	p := NewParser(Python)
	defer p.Close()
	checked := 0
	for k, src := range srcs {
		tree, err := p.Parse(context.Background(), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		f := tree.Flat()
		for i, n := range f.Nodes {
			if f.IndexOf(n) != i {
				t.Fatalf("source %d: IndexOf(node %d) = %d", k, i, f.IndexOf(n))
			}
			names := append([]string(nil), asked...)
			for j, end := i+1, int(f.Next[i]); j < end; j = int(f.Next[j]) {
				if f.fields[j] != 0 {
					names = append(names, byID[f.fields[j]])
				}
			}
			for _, name := range names {
				want := n.ChildByFieldName(name)
				got := f.Child(i, name)
				switch {
				case want == nil && got >= 0:
					t.Fatalf("source %d: node %d (%s) field %s: flat has node %d, ChildByFieldName none", k, i, f.Types[i], name, got)
				case want != nil && (got < 0 || !f.Nodes[got].Equal(want)):
					t.Fatalf("source %d: node %d (%s) field %s: flat %d, ChildByFieldName %s %q", k, i, f.Types[i], name, got, want.Type(), Text(want, tree.Src))
				}
				checked++
			}
		}
		if f.IndexOf(tree.Root()) >= 0 && !tree.Root().Equal(f.Nodes[f.IndexOf(tree.Root())]) {
			t.Fatalf("source %d: IndexOf a cursor node gives a different node", k)
		}
		tree.Close()
	}
	if checked < 100000 {
		t.Fatalf("only %d lookups checked", checked)
	}
}

// TestFlatParentMatchesParent checks Flat.Parent against Node.Parent for
// every node of the repository's Python sources and the hand-written cases
// (a broken file included).
func TestFlatParentMatchesParent(t *testing.T) {
	srcs := append(handIndexSources(), "def f(:\n    x = [1, 2\nprint('a')\n")
	srcs = append(srcs, repoPythonSources(t, 150)...)
	p := NewParser(Python)
	defer p.Close()
	checked := 0
	for k, src := range srcs {
		tree, err := p.Parse(context.Background(), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		f := tree.Flat()
		for i, n := range f.Nodes {
			want, got := n.Parent(), f.Parent(i)
			switch {
			case want == nil && got >= 0:
				t.Fatalf("source %d: node %d (%s): flat parent %d, Parent none", k, i, f.Types[i], got)
			case want != nil && (got < 0 || !f.Nodes[got].Equal(want)):
				t.Fatalf("source %d: node %d (%s): flat parent %d, Parent %s", k, i, f.Types[i], got, want.Type())
			}
			checked++
		}
		tree.Close()
	}
	if checked < 50000 {
		t.Fatalf("only %d parents checked", checked)
	}
}

// TestFlatTypesFromSymbols checks the types the flattened copy takes from
// its symbol tables against Node.Type, for both grammars: the repository's
// Python sources, its CUDA fixtures (read as C++), and broken files (whose
// ERROR nodes have a symbol past the table).
func TestFlatTypesFromSymbols(t *testing.T) {
	srcs := map[Lang][]string{
		Python: append(repoPythonSources(t, 150), "def f(:\n    x = [1, 2\nprint('a')\n"),
		Cpp:    {"__global__ void k(float *x) { x[threadIdx.x] = ; }\n", "template <typename T> struct S { T a; };\n"},
	}
	filepath.Walk(filepath.Join("..", "..", "fixtures"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && (strings.HasSuffix(p, ".cu") || strings.HasSuffix(p, ".cuh")) {
			if b, err := os.ReadFile(p); err == nil {
				srcs[Cpp] = append(srcs[Cpp], string(b))
			}
		}
		return nil
	})
	if len(srcs[Cpp]) < 20 {
		t.Fatalf("only %d CUDA sources found", len(srcs[Cpp]))
	}
	for lang, list := range srcs {
		p := NewParser(lang)
		checked, errors := 0, 0
		for k, src := range list {
			tree, err := p.Parse(context.Background(), []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			f := tree.Flat()
			for i, n := range f.Nodes {
				if typ := n.Type(); f.Types[i] != typ {
					t.Fatalf("%s source %d: node %d: flat type %q, Type %q", lang, k, i, f.Types[i], typ)
				}
				if n.IsError() {
					errors++
				}
				checked++
			}
			tree.Close()
		}
		p.Close()
		if checked < 10000 || errors == 0 {
			t.Fatalf("%s: only %d nodes checked, %d of them errors", lang, checked, errors)
		}
	}
}

// handIndexSources are a few hand-written cases: f-string calls, nested
// calls, decorators, comments.
func handIndexSources() []string {
	return []string{
		"",
		"x = f(a)(b).c(d)\n@dec.x(1)\n@plain\nclass A(B.C):\n    y: int = g(f\"{h(1)!r} {k.m}\")  # call(x)\n    z = w = q.r\n",
		"'''doc f(x)'''\nimport torch.cuda as tc, os\nfrom a.b import (c as d, e)\ndef f():\n    from x import y\n    return [i(j) for j in 'k(l)' if m.n]\n",
		"s = ('a' 'b(c)').join(map(str, [1]))\nlambda: t.u(v)\n",
		`a = f"{g(f'{h(1)}')}" + f'{x!r:>{w(1)}}' + rb'\x(1)' + f'''{
  k(2)
}'''
m(n)  # o(p)
`,
	}
}

// repoPythonSources returns up to limit of the repository's Python files.
func repoPythonSources(t *testing.T, limit int) []string {
	t.Helper()
	var srcs []string
	filepath.Walk(filepath.Join("..", ".."), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if fi.IsDir() && (strings.HasPrefix(fi.Name(), ".") && p != filepath.Join("..", "..") || fi.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !fi.IsDir() && strings.HasSuffix(p, ".py") && fi.Size() < 1<<17 && len(srcs) < limit {
			if b, err := os.ReadFile(p); err == nil {
				srcs = append(srcs, string(b))
			}
		}
		return nil
	})
	if len(srcs) < 20 {
		t.Fatalf("only %d sources found", len(srcs))
	}
	return srcs
}

// queryIndex is the index's oracle: one query pattern per IndexTypes entry,
// then string and comment (the subtrees the index leaves out), captures
// sorted into preorder.
func queryIndex(t *testing.T, tree *Tree) *Index {
	t.Helper()
	types := append(append([]string(nil), IndexTypes...), "string", "comment")
	var pat []byte
	for _, typ := range types {
		pat = append(pat, "("+typ+") @n\n"...)
	}
	q, err := sitter.NewQuery(pat, Python.language())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	type capture struct {
		n          *Node
		typ        string
		start, end uint32
	}
	var caps []capture
	qc := sitter.NewQueryCursor()
	defer qc.Close()
	qc.Exec(q, tree.Root())
	for {
		m, ok := qc.NextMatch()
		if !ok {
			break
		}
		for _, c := range m.Captures {
			caps = append(caps, capture{n: c.Node, typ: types[m.PatternIndex], start: c.Node.StartByte(), end: c.Node.EndByte()})
		}
	}
	// Preorder: by start, then the enclosing (longer) node first. Nodes of
	// these types never share both ends with one another.
	sort.SliceStable(caps, func(i, j int) bool {
		if caps[i].start != caps[j].start {
			return caps[i].start < caps[j].start
		}
		return caps[i].end > caps[j].end
	})
	ix := &Index{}
	var skipEnd uint32
	skipping := false
	for _, c := range caps {
		if skipping && c.start < skipEnd {
			continue // inside a string or comment
		}
		skipping = false
		if c.typ == "string" || c.typ == "comment" {
			skipping, skipEnd = true, c.end
			continue
		}
		ix.Types = append(ix.Types, c.typ)
		ix.Nodes = append(ix.Nodes, c.n)
	}
	return ix
}
