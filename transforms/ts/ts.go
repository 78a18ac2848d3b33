// Package ts is a small façade over smacker/go-tree-sitter: it owns parsers and
// trees, closes what it opens, and offers the few node helpers the rules need.
//
// A Parser is not safe for concurrent use; keep one per worker (see Pool).
package ts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/cpp"
	"github.com/smacker/go-tree-sitter/python"
)

// Node is a tree-sitter syntax node.
type Node = sitter.Node

// Lang names a grammar.
type Lang int

const (
	// Python is tree-sitter-python.
	Python Lang = iota
	// Cpp is tree-sitter-cpp, used for CUDA sources after masking.
	Cpp
)

func (l Lang) String() string {
	switch l {
	case Python:
		return "python"
	case Cpp:
		return "cpp"
	}
	return fmt.Sprintf("lang(%d)", int(l))
}

func (l Lang) language() *sitter.Language {
	if l == Cpp {
		return cpp.GetLanguage()
	}
	return python.GetLanguage()
}

// Parser parses one language. Close it when done.
type Parser struct {
	lang Lang
	p    *sitter.Parser
}

// NewParser returns a parser for lang.
func NewParser(lang Lang) *Parser {
	p := sitter.NewParser()
	p.SetLanguage(lang.language())
	return &Parser{lang: lang, p: p}
}

// Lang reports the parser's language.
func (p *Parser) Lang() Lang { return p.lang }

// Parse parses src. The returned tree must be closed. A cancelled ctx
// stops the parse (an error wrapping ctx.Err()).
func (p *Parser) Parse(ctx context.Context, src []byte) (*Tree, error) {
	t, err := p.parse(ctx, nil, src)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", p.lang, err)
	}
	return &Tree{t: t, Src: src, lang: p.lang}, nil
}

// parse is ParseCtx, minding a flaw of go-tree-sitter's: its cancellation
// flag, set by a goroutine when ctx ends, can be set just after a parse
// has finished (a per-file deadline that expires then), and nothing clears
// it but a later cancelled parse; every later parse with that parser then
// fails at once (ErrOperationLimit) whatever its context. Such a parser
// is replaced by a new one and the parse run again.
func (p *Parser) parse(ctx context.Context, old *sitter.Tree, src []byte) (*sitter.Tree, error) {
	t, err := p.p.ParseCtx(ctx, old, src)
	if err == nil || ctx.Err() != nil || !errors.Is(err, sitter.ErrOperationLimit) {
		return t, err
	}
	p.p.Close()
	p.p = sitter.NewParser()
	p.p.SetLanguage(p.lang.language())
	return p.p.ParseCtx(ctx, old, src)
}

// Change is one replacement in a text: the old text's bytes [Start, End)
// became NewLen bytes.
type Change struct{ Start, End, NewLen int }

// Reparse parses src, which is old.Src with changes made (sorted, none
// starting before the previous one ends), by tree-sitter's incremental
// parse: old's subtrees outside the changes are reused. A tree without
// errors is the one a fresh parse of src gives; a tree with an error comes
// from a fresh parse, as tree-sitter's error recovery can place errors
// differently in an incremental parse (TestReparseIsFreshParse). old is left
// as it was. Changes that are out of order or do not account for src's
// length get a fresh parse.
func (p *Parser) Reparse(ctx context.Context, old *Tree, changes []Change, src []byte) (*Tree, error) {
	if len(changes) > maxEdits {
		c, ok := coalesce(changes)
		if !ok {
			return p.Parse(ctx, src)
		}
		changes = []Change{c}
	}
	edits, ok := editInputs(old.Src, changes, src)
	if !ok || old.t == nil {
		return p.Parse(ctx, src)
	}
	base := old.t.Copy()
	defer base.Close()
	for _, e := range edits {
		base.Edit(e)
	}
	t, err := p.parse(ctx, base, src)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", p.lang, err)
	}
	if t.RootNode().HasError() {
		t.Close()
		return p.Parse(ctx, src)
	}
	return &Tree{t: t, Src: src, lang: p.lang}, nil
}

// maxEdits is the most changes Reparse hands tree-sitter one by one. Each
// edit walks the old tree from its root down to the change, so its cost
// grows with the nesting there: n changes inside an expression nested n
// deep (100,000 `+ x.cuda()` on one line) cost n² steps. More changes are
// made one edit, from the first change's start to the last one's end: the
// parse then reuses less of the old tree, never more than a fresh parse
// costs.
const maxEdits = 64

// coalesce is the one change that spans changes; false when they are out
// of order or overlap.
func coalesce(changes []Change) (Change, bool) {
	first, last := changes[0], changes[len(changes)-1]
	c := Change{Start: first.Start, End: last.End}
	c.NewLen = c.End - c.Start
	prevEnd := 0
	for _, x := range changes {
		if x.Start < prevEnd || x.End < x.Start || x.NewLen < 0 {
			return Change{}, false
		}
		prevEnd = x.End
		c.NewLen += x.NewLen - (x.End - x.Start)
	}
	return c, true
}

// editInputs are tree-sitter's edits for changes, one after the other: each
// in the coordinates of the text with the earlier ones made. false when the
// changes are out of order or out of range, or do not turn old into src.
func editInputs(old []byte, changes []Change, src []byte) ([]sitter.EditInput, bool) {
	edits := make([]sitter.EditInput, 0, len(changes))
	delta, prevEnd := 0, 0
	at, pt := 0, sitter.Point{} // a position in src and its point
	for _, c := range changes {
		if c.Start < prevEnd || c.End < c.Start || c.End > len(old) || c.NewLen < 0 {
			return nil, false
		}
		start := c.Start + delta
		if start < at || start+c.NewLen > len(src) {
			return nil, false
		}
		startPt := advance(pt, src[at:start])
		newEnd := advance(startPt, src[start:start+c.NewLen])
		edits = append(edits, sitter.EditInput{
			StartIndex: uint32(start), OldEndIndex: uint32(start + c.End - c.Start), NewEndIndex: uint32(start + c.NewLen),
			StartPoint: startPt, OldEndPoint: advance(startPt, old[c.Start:c.End]), NewEndPoint: newEnd,
		})
		at, pt = start+c.NewLen, newEnd
		delta += c.NewLen - (c.End - c.Start)
		prevEnd = c.End
	}
	return edits, len(old)+delta == len(src)
}

// advance is the point after text, starting at pt (rows count "\n", columns
// bytes, as tree-sitter's do).
func advance(pt sitter.Point, text []byte) sitter.Point {
	for {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			pt.Column += uint32(len(text))
			return pt
		}
		pt.Row++
		pt.Column = 0
		text = text[i+1:]
	}
}

// Close releases the parser.
func (p *Parser) Close() {
	if p.p != nil {
		p.p.Close()
		p.p = nil
	}
}

// Tree is a parsed source. Src is the text it was parsed from.
type Tree struct {
	t     *sitter.Tree
	Src   []byte
	lang  Lang
	flat  *Flat
	index *Index
}

// Root returns the root node.
func (t *Tree) Root() *Node { return t.t.RootNode() }

// Close releases the tree.
func (t *Tree) Close() {
	if t.t != nil {
		t.t.Close()
		t.t = nil
	}
	t.flat = nil
	t.index = nil
}

// Flat is a Go-side copy of a tree: every node (named or not) in source
// order, as Walk visits them, with its type and byte range, built in one
// traversal in C (flatc.go). Rules that scan the whole tree read it instead
// of crossing into C (cursor moves, Type, ranges) for every node on every
// scan. Its nodes are equal (Node.Equal) to the ones a cursor or a parent
// hands out, not the same pointers: compare nodes with Equal.
type Flat struct {
	Nodes []*Node  // the nodes in preorder
	Types []string // Types[i] == Nodes[i].Type()
	// Next[i] is the index of the first node after the subtree of i (the
	// next preorder node that is not a descendant of i).
	Next []int32

	rng     [][2]uint32 // rng[i] is node i's byte range
	fields  []uint16    // fields[i] is the id of the field node i is in its parent (0: none)
	parent  []int32     // parent[i] is the index of node i's parent (-1: the root)
	backing []Node      // the nodes Nodes points into
	lang    Lang
}

// Child returns the index of node i's first child in field (as
// Node.ChildByFieldName finds it), or -1.
func (f *Flat) Child(i int, field string) int {
	id := fieldID(f.lang, field)
	if id == 0 {
		return -1
	}
	for j, end := i+1, int(f.Next[i]); j < end; j = int(f.Next[j]) {
		if f.fields[j] == id {
			return j
		}
	}
	return -1
}

// Parent returns the index of node i's parent (as Node.Parent finds it:
// the nearest visible ancestor), or -1 for the root.
func (f *Flat) Parent(i int) int { return int(f.parent[i]) }

// fieldIDs are each grammar's field ids by name, read once.
var fieldIDs = [...]func() map[string]uint16{
	Python: sync.OnceValue(func() map[string]uint16 { return fieldTable(Python) }),
	Cpp:    sync.OnceValue(func() map[string]uint16 { return fieldTable(Cpp) }),
}

func fieldTable(l Lang) map[string]uint16 {
	m := map[string]uint16{}
	for id := 1; id < 1<<16; id++ {
		name := l.language().FieldName(id)
		if name == "" {
			break
		}
		m[name] = uint16(id)
	}
	return m
}

// fieldID is field's id in l's grammar, 0 when it has none of that name.
func fieldID(l Lang, field string) uint16 {
	if int(l) < 0 || int(l) >= len(fieldIDs) {
		return 0
	}
	return fieldIDs[l]()[field]
}

// Range returns the byte range of node i.
func (f *Flat) Range(i int) (start, end int) {
	return int(f.rng[i][0]), int(f.rng[i][1])
}

// Flat returns the tree's flattened copy, built on first use. Like the
// tree, it is not safe for concurrent first use; do not modify it.
func (t *Tree) Flat() *Flat {
	if t.flat == nil {
		t.flat = flatten(t.Root(), t.lang, len(t.Src)/4+16)
		t.flat.lang = t.lang
	}
	return t.flat
}

// Len is the number of nodes.
func (f *Flat) Len() int { return len(f.Nodes) }

// Walk visits every node index in source order, like Walk; when fn
// returns false the descendants of that node are skipped.
func (f *Flat) Walk(fn func(i int) bool) {
	for i := 0; i < len(f.Nodes); {
		if fn(i) {
			i++
		} else {
			i = int(f.Next[i])
		}
	}
}

// ErrorCount counts ERROR and MISSING nodes.
func (t *Tree) ErrorCount() int {
	root := t.Root()
	if !root.HasError() {
		return 0
	}
	n := 0
	Walk(root, func(x *Node) bool {
		if x.IsError() || x.IsMissing() {
			n++
		}
		return x.HasError()
	})
	return n
}

// FirstError returns the first ERROR or MISSING node, or nil.
func (t *Tree) FirstError() *Node {
	var found *Node
	Walk(t.Root(), func(x *Node) bool {
		if found != nil {
			return false
		}
		if x.IsError() || x.IsMissing() {
			found = x
			return false
		}
		return x.HasError()
	})
	return found
}

// Text returns the source text of n.
func Text(n *Node, src []byte) string {
	if n == nil {
		return ""
	}
	return string(src[n.StartByte():n.EndByte()])
}

// Walk visits n and its descendants in source order; when fn returns false the
// children of that node are skipped.
func Walk(n *Node, fn func(*Node) bool) {
	if n == nil {
		return
	}
	c := sitter.NewTreeCursor(n)
	defer c.Close()
	walk(c, fn)
}

func walk(c *sitter.TreeCursor, fn func(*Node) bool) {
	for {
		descend := fn(c.CurrentNode())
		if descend && c.GoToFirstChild() {
			continue
		}
		for !c.GoToNextSibling() {
			if !c.GoToParent() {
				return
			}
		}
	}
}

// Children returns the named children of n.
func Children(n *Node) []*Node {
	cnt := int(n.NamedChildCount())
	out := make([]*Node, 0, cnt)
	for i := 0; i < cnt; i++ {
		out = append(out, n.NamedChild(i))
	}
	return out
}

// Ancestor returns the nearest ancestor of n whose type is one of types.
func Ancestor(n *Node, types ...string) *Node {
	for p := n.Parent(); p != nil; p = p.Parent() {
		for _, t := range types {
			if p.Type() == t {
				return p
			}
		}
	}
	return nil
}

// Pool hands out parsers of one language to concurrent workers.
type Pool struct {
	lang Lang
	mu   sync.Mutex
	free []*Parser
}

// NewPool returns a pool for lang.
func NewPool(lang Lang) *Pool { return &Pool{lang: lang} }

// Get takes a parser from the pool or makes one.
func (p *Pool) Get() *Parser {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		x := p.free[n-1]
		p.free = p.free[:n-1]
		return x
	}
	return NewParser(p.lang)
}

// Put returns a parser to the pool.
func (p *Pool) Put(x *Parser) {
	p.mu.Lock()
	p.free = append(p.free, x)
	p.mu.Unlock()
}

// Close closes every idle parser.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.free {
		x.Close()
	}
	p.free = nil
}

// IndexTypes are the node types an Index lists.
var IndexTypes = []string{"call", "decorator", "class_definition", "assignment",
	"import_statement", "import_from_statement"}

// Index lists, in source order (as Walk visits them), the tree's nodes of
// the IndexTypes that do not lie inside a string or a comment. Rules look
// for calls, decorators, classes, assignments and imports this way.
type Index struct {
	Types []string // Types[i] == Nodes[i].Type(), one of IndexTypes
	Nodes []*Node
}

// Indexed reports whether typ is one of the IndexTypes.
func Indexed(typ string) bool {
	for _, t := range IndexTypes {
		if t == typ {
			return true
		}
	}
	return false
}

// Index returns the tree's index, built on first use from the flattened
// tree. Like the tree, it is not safe for concurrent first use; do not
// modify it.
func (t *Tree) Index() *Index {
	if t.index == nil {
		t.index = indexFromFlat(t.Flat())
	}
	return t.index
}

// indexFromFlat builds an Index by walking the flattened tree.
func indexFromFlat(f *Flat) *Index {
	ix := &Index{}
	f.Walk(func(i int) bool {
		switch typ := f.Types[i]; {
		case typ == "string" || typ == "comment":
			return false
		case Indexed(typ):
			ix.Types = append(ix.Types, typ)
			ix.Nodes = append(ix.Nodes, f.Nodes[i])
		}
		return true
	})
	return ix
}
