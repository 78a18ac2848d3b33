package rule

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// Imports is what a module imports at any level, by local name.
type Imports struct {
	// Modules maps a local name to the module it binds: "torch" -> "torch",
	// "nn" -> "torch.nn" (import torch.nn as nn), "cuda" -> "torch.cuda"
	// (from torch import cuda).
	Modules map[string]string
	// Names maps a local name to the qualified object it binds for
	// from-imports: "autocast" -> "torch.cuda.amp.autocast".
	Names map[string]string
	// LastTopLevel is the end byte of the line holding the last top-level
	// import statement, or -1 when there is none.
	LastTopLevel int
	// BodyStart is where the first statement that is not a docstring,
	// comment or __future__ import begins; used when there is no import.
	BodyStart int
	// Lines holds each import statement's text, trimmed, for presence checks.
	Lines map[string]bool
	// LeadEnd is the end byte of the line holding the last top-level import
	// of the module's leading import block (before any other statement), or
	// -1 when the module does not start with imports; LeadNames are the
	// local names that block binds. Code between LeadEnd and a later import
	// runs first, so what it may use is inserted at LeadEnd (headerAt).
	LeadEnd   int
	LeadNames map[string]bool
}

// Qualify returns the dotted name an attribute chain stands for, with the
// first component resolved through the imports: "nn.Module" -> "torch.nn.Module".
// It returns "" when the head is not an imported name.
func (im *Imports) Qualify(dotted string) string {
	head, rest, _ := strings.Cut(dotted, ".")
	if m, ok := im.Modules[head]; ok {
		if rest == "" {
			return m
		}
		return m + "." + rest
	}
	if n, ok := im.Names[head]; ok {
		if rest == "" {
			return n
		}
		return n + "." + rest
	}
	return ""
}

// HasLocal reports whether name is bound by an import.
func (im *Imports) HasLocal(name string) bool {
	_, a := im.Modules[name]
	_, b := im.Names[name]
	return a || b
}

// TorchAlias returns the local name bound to the torch module ("" if none).
func (im *Imports) TorchAlias() string {
	for local, mod := range im.Modules {
		if mod == "torch" {
			if local == "torch" {
				return local
			}
		}
	}
	for local, mod := range im.Modules {
		if mod == "torch" {
			return local
		}
	}
	return ""
}

// leadNames adds the local names import statement n binds to names.
func leadNames(n *ts.Node, src []byte, names map[string]bool) {
	modNode := n.ChildByFieldName("module_name")
	for _, c := range ts.Children(n) {
		if modNode != nil && c.Equal(modNode) {
			continue
		}
		switch c.Type() {
		case "dotted_name":
			head, _, _ := strings.Cut(ts.Text(c, src), ".")
			names[head] = true
		case "aliased_import":
			names[ts.Text(c.ChildByFieldName("alias"), src)] = true
		}
	}
}

// CollectImports walks tree and records its imports.
func CollectImports(tree *ts.Tree) *Imports {
	src := tree.Src
	im := &Imports{Modules: map[string]string{}, Names: map[string]string{}, LastTopLevel: -1, Lines: map[string]bool{},
		LeadEnd: -1, LeadNames: map[string]bool{}}
	root := tree.Root()
	im.BodyStart = -1
	for i := 0; i < int(root.NamedChildCount()); i++ {
		c := root.NamedChild(i)
		switch c.Type() {
		case "import_statement", "import_from_statement", "future_import_statement":
			im.LastTopLevel = lineEnd(src, int(c.EndByte()))
			if im.BodyStart < 0 {
				im.LeadEnd = im.LastTopLevel
				leadNames(c, src, im.LeadNames)
			}
		case "comment":
		case "expression_statement":
			if im.BodyStart < 0 && i == firstNonComment(root) && c.NamedChildCount() == 1 && c.NamedChild(0).Type() == "string" {
				continue // module docstring
			}
			if im.BodyStart < 0 {
				im.BodyStart = lineStart(src, int(c.StartByte()))
			}
		default:
			if im.BodyStart < 0 {
				im.BodyStart = lineStart(src, int(c.StartByte()))
			}
		}
	}
	if im.BodyStart < 0 {
		im.BodyStart = len(src)
	}
	ix := tree.Index()
	for i, n := range ix.Nodes {
		switch ix.Types[i] {
		case "import_statement":
			im.Lines[strings.TrimSpace(ts.Text(n, src))] = true
			for _, c := range ts.Children(n) {
				switch c.Type() {
				case "dotted_name":
					name := ts.Text(c, src)
					head, _, _ := strings.Cut(name, ".")
					im.Modules[head] = head
				case "aliased_import":
					mod := ts.Text(c.ChildByFieldName("name"), src)
					alias := ts.Text(c.ChildByFieldName("alias"), src)
					im.Modules[alias] = mod
				}
			}
		case "import_from_statement":
			im.Lines[strings.TrimSpace(ts.Text(n, src))] = true
			modNode := n.ChildByFieldName("module_name")
			mod := ts.Text(modNode, src)
			for j := 0; j < int(n.NamedChildCount()); j++ {
				c := n.NamedChild(j)
				// FieldNameForChild counts all children, not named ones, so
				// compare with the module node itself.
				if modNode != nil && c.Equal(modNode) {
					continue
				}
				switch c.Type() {
				case "dotted_name":
					name := ts.Text(c, src)
					im.Names[name] = mod + "." + name
				case "aliased_import":
					name := ts.Text(c.ChildByFieldName("name"), src)
					alias := ts.Text(c.ChildByFieldName("alias"), src)
					im.Names[alias] = mod + "." + name
				}
			}
		}
	}
	// A from-import of a module binds a module name too: "from torch import cuda".
	for local, q := range im.Names {
		if q == "torch.cuda" || q == "torch.nn" || q == "torch.distributed" || q == "torch.amp" {
			im.Modules[local] = q
		}
	}
	return im
}

func firstNonComment(root *ts.Node) int {
	for i := 0; i < int(root.NamedChildCount()); i++ {
		if root.NamedChild(i).Type() != "comment" {
			return i
		}
	}
	return -1
}

func lineEnd(src []byte, off int) int {
	for off < len(src) && src[off] != '\n' {
		off++
	}
	if off < len(src) {
		off++
	}
	return off
}

func lineStart(src []byte, off int) int {
	for off > 0 && src[off-1] != '\n' {
		off--
	}
	return off
}
