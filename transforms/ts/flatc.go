package ts

// The flattening walk runs in C: one call per tree instead of four or five
// calls into C per node (cursor moves, the node, its symbol, its range).
// The tree-sitter functions it uses are the ones go-tree-sitter compiles and
// links in; they are declared here, with the two structs' layouts from
// tree-sitter's api.h (checked against sitter.Node at init).

/*
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>

typedef uint16_t TSSymbol;
typedef struct TSNode {
  uint32_t context[4];
  const void *id;
  const void *tree;
} TSNode;
typedef struct TSTreeCursor {
  const void *tree;
  const void *id;
  uint32_t context[3];
} TSTreeCursor;

TSTreeCursor ts_tree_cursor_new(TSNode);
void ts_tree_cursor_delete(TSTreeCursor *);
TSNode ts_tree_cursor_current_node(const TSTreeCursor *);
bool ts_tree_cursor_goto_first_child(TSTreeCursor *);
bool ts_tree_cursor_goto_next_sibling(TSTreeCursor *);
bool ts_tree_cursor_goto_parent(TSTreeCursor *);
TSSymbol ts_node_symbol(TSNode);
uint32_t ts_node_start_byte(TSNode);
uint32_t ts_node_end_byte(TSNode);
uint16_t ts_tree_cursor_current_field_id(const TSTreeCursor *);

// pallasify_flatten writes the nodes under root in preorder (as a cursor
// walk visits them) into the arrays, at most cap of them, and returns how
// many there are (more than cap: call again with bigger arrays), or -1 when
// it runs out of memory. next[i] is the index of the first node after i's
// subtree, fields[i] the id of the field node i is in its parent (0: none),
// parent[i] the index of i's parent (-1 for root).
static int64_t pallasify_flatten(TSNode root, TSNode *nodes, TSSymbol *syms, uint16_t *fields, uint32_t *rng, int32_t *next, int32_t *parent, int64_t cap) {
	TSTreeCursor c = ts_tree_cursor_new(root);
	int64_t n = 0, depth = 0, ocap = 64;
	int64_t *open = malloc(ocap * sizeof(int64_t));
	if (open == NULL) {
		ts_tree_cursor_delete(&c);
		return -1;
	}
	for (;;) {
		if (n < cap) {
			TSNode x = ts_tree_cursor_current_node(&c);
			nodes[n] = x;
			syms[n] = ts_node_symbol(x);
			fields[n] = n == 0 ? 0 : ts_tree_cursor_current_field_id(&c);
			rng[2*n] = ts_node_start_byte(x);
			rng[2*n+1] = ts_node_end_byte(x);
			next[n] = (int32_t)(n + 1);
			parent[n] = depth == 0 ? -1 : (int32_t)open[depth-1];
		}
		int64_t i = n++;
		if (ts_tree_cursor_goto_first_child(&c)) {
			if (depth == ocap) {
				ocap *= 2;
				int64_t *grown = realloc(open, ocap * sizeof(int64_t));
				if (grown == NULL) {
					free(open);
					ts_tree_cursor_delete(&c);
					return -1;
				}
				open = grown;
			}
			open[depth++] = i;
			continue;
		}
		for (;;) {
			if (ts_tree_cursor_goto_next_sibling(&c)) {
				break;
			}
			if (!ts_tree_cursor_goto_parent(&c) || depth == 0) {
				free(open);
				ts_tree_cursor_delete(&c);
				return n;
			}
			int64_t p = open[--depth];
			if (p < cap) {
				next[p] = (int32_t)n;
			}
		}
	}
}

// pallasify_measure counts the nodes under root and the deepest nesting
// (root: 1) by one cursor walk, storing nothing.
static void pallasify_measure(TSNode root, int64_t *nodes, int64_t *maxDepth) {
	TSTreeCursor c = ts_tree_cursor_new(root);
	int64_t n = 0, depth = 1, deepest = 1;
	for (;;) {
		n++;
		if (ts_tree_cursor_goto_first_child(&c)) {
			if (++depth > deepest) {
				deepest = depth;
			}
			continue;
		}
		for (;;) {
			if (ts_tree_cursor_goto_next_sibling(&c)) {
				break;
			}
			if (depth == 1 || !ts_tree_cursor_goto_parent(&c)) {
				ts_tree_cursor_delete(&c);
				*nodes = n;
				*maxDepth = deepest;
				return;
			}
			depth--;
		}
	}
}
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	sitter "github.com/smacker/go-tree-sitter"
)

// nodeLayout mirrors sitter.Node: the C node, then the tree it belongs to.
type nodeLayout struct {
	c C.TSNode
	t *sitter.Tree
}

func init() {
	if unsafe.Sizeof(nodeLayout{}) != unsafe.Sizeof(sitter.Node{}) || unsafe.Sizeof(C.TSNode{}) != unsafe.Sizeof(cNode{}) ||
		unsafe.Alignof(C.TSNode{}) > unsafe.Alignof(cNode{}) {
		panic(fmt.Sprintf("ts: sitter.Node is %d bytes, its mirror %d: go-tree-sitter's layout changed",
			unsafe.Sizeof(sitter.Node{}), unsafe.Sizeof(nodeLayout{})))
	}
}

// flatScratch holds the C walk's output arrays between trees; flatten
// copies them into a Flat of the exact size. The nodes are held as plain
// words (cNode), not C.TSNode, whose two C pointers would make the array
// one the garbage collector scans and cgo's pointer check walks, word by
// word, on every call: none of them is a Go pointer.
type flatScratch struct {
	nodes  []cNode
	syms   []C.TSSymbol
	fields []uint16
	rng    [][2]uint32
	next   []int32
	parent []int32
}

// cNode is a C.TSNode's bytes (four uint32 of context, two C pointers).
type cNode [4]uint64

var scratchPool = sync.Pool{New: func() any { return &flatScratch{} }}

// grow makes room for n nodes.
func (s *flatScratch) grow(n int) {
	if len(s.nodes) >= n {
		return
	}
	s.nodes, s.syms, s.fields = make([]cNode, n), make([]C.TSSymbol, n), make([]uint16, n)
	s.rng, s.next, s.parent = make([][2]uint32, n), make([]int32, n), make([]int32, n)
}

// walk runs the C walk into s and returns the number of nodes (more than
// s holds: grow and walk again).
func (s *flatScratch) walk(root C.TSNode) int {
	n := int(C.pallasify_flatten(root, (*C.TSNode)(unsafe.Pointer(&s.nodes[0])), &s.syms[0], (*C.uint16_t)(unsafe.Pointer(&s.fields[0])),
		(*C.uint32_t)(unsafe.Pointer(&s.rng[0])), (*C.int32_t)(unsafe.Pointer(&s.next[0])), (*C.int32_t)(unsafe.Pointer(&s.parent[0])),
		C.int64_t(len(s.nodes))))
	if n < 0 {
		panic("ts: out of memory flattening a tree")
	}
	return n
}

// symbolNames are each grammar's symbol names by symbol, read once: a
// node's type is the name of its symbol (ts_node_type and ts_node_symbol
// both resolve the node's alias; the public symbol shares its name).
var symbolNames = [...]func() []string{
	Python: sync.OnceValue(func() []string { return symbolTable(Python) }),
	Cpp:    sync.OnceValue(func() []string { return symbolTable(Cpp) }),
}

func symbolTable(l Lang) []string {
	lang := l.language()
	names := make([]string, lang.SymbolCount())
	for i := range names {
		names[i] = lang.SymbolName(sitter.Symbol(i))
	}
	return names
}

// flatten builds the Flat of the tree under root in one call into C.
func flatten(root *Node, lang Lang, sizeHint int) *Flat {
	f := &Flat{}
	if root == nil {
		return f
	}
	r := (*nodeLayout)(unsafe.Pointer(root))
	s := scratchPool.Get().(*flatScratch)
	defer scratchPool.Put(s)
	s.grow(max(sizeHint, 1))
	n := s.walk(r.c)
	if n > len(s.nodes) {
		s.grow(n)
		n = s.walk(r.c)
	}
	f.Next = append([]int32(nil), s.next[:n]...)
	f.parent = append([]int32(nil), s.parent[:n]...)
	f.rng = append([][2]uint32(nil), s.rng[:n]...)
	f.fields = append([]uint16(nil), s.fields[:n]...)
	// One allocation holds every node; Nodes points into it. A node's type
	// is a function of its symbol: asked of C once per symbol.
	nodes := make([]sitter.Node, n)
	f.backing = nodes
	f.Nodes = make([]*Node, n)
	f.Types = make([]string, n)
	table := symbolNames[lang]()
	for i := range n {
		*(*nodeLayout)(unsafe.Pointer(&nodes[i])) = nodeLayout{c: *(*C.TSNode)(unsafe.Pointer(&s.nodes[i])), t: r.t}
		f.Nodes[i] = &nodes[i]
		if sym := int(s.syms[i]); sym < len(table) {
			f.Types[i] = table[sym]
		} else {
			f.Types[i] = nodes[i].Type() // ERROR: a built-in symbol past the table
		}
	}
	return f
}

// IndexOf returns the index of n in f, or -1 when n is not one of f's nodes
// (a node a cursor or a parent handed out, even an Equal one).
func (f *Flat) IndexOf(n *Node) int {
	if n == nil || len(f.backing) == 0 {
		return -1
	}
	size := unsafe.Sizeof(sitter.Node{})
	off := uintptr(unsafe.Pointer(n)) - uintptr(unsafe.Pointer(&f.backing[0]))
	if off >= uintptr(len(f.backing))*size || off%size != 0 {
		return -1
	}
	return int(off / size)
}

// Measure returns the number of nodes in the tree (named or not, as Flat
// holds them) and the depth of its deepest node (the root alone: 1), by one
// walk in C that allocates nothing: the engine checks a file against its
// limits with it before building anything per node.
func (t *Tree) Measure() (nodes, depth int) {
	if t.t == nil {
		return 0, 0
	}
	r := (*nodeLayout)(unsafe.Pointer(t.Root()))
	var n, d C.int64_t
	C.pallasify_measure(r.c, &n, &d)
	return int(n), int(d)
}
