package pipeline

import (
	"bytes"
	"path"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/transforms/rule"
)

// Shared device helpers (rule.Prelude.Share): the device rules write the
// definitions a package's modules need (pallasify_device, device_at, the
// memory helper, the first-use sentinel) once, into
// <top package>/_pallasify_device.py, and each module imports them from
// there (kit.HelperFrom says how: relatively from a library module of a
// package directory, by absolute name from an entry script or a module of a
// namespace directory inside the package that imports a module of its top
// package by name already; layoutOf says which helper module). A file in
// no package (a loose script or module, a test directory without
// __init__.py) keeps its definitions inline: no import path to a shared
// module works for every way such a file is run.

// helperFile is the file name of a package's helper module.
const helperFile = rule.HelperModule + ".py"

// packageDirs maps each directory (slash-separated, "." for the root) that
// holds an __init__.py among the walked files to true, and every other
// directory and module path (rel without ".py") of the walked Python files
// to false: layoutOf tells packages by the value and a package's own
// modules by the key.
func packageDirs(entries []entry) map[string]bool {
	dirs := map[string]bool{}
	for _, e := range entries {
		if path.Base(e.rel) == "__init__.py" {
			dirs[path.Dir(e.rel)] = true
		}
	}
	for _, e := range entries {
		mod, ok := strings.CutSuffix(e.rel, ".py")
		if !ok {
			continue
		}
		for p := mod; p != "."; p = path.Dir(p) {
			if _, seen := dirs[p]; !seen {
				dirs[p] = false
			}
		}
	}
	return dirs
}

// layoutOf is where rel sits for the rules, and the path of the helper module
// its shared definitions go to ("" for a file in no package). A file of a
// package directory (one with an __init__.py) has its package's helper
// module: the highest directory reached from its own through directories
// that hold an __init__.py, the relative import prefix climbing to it. A
// file of a namespace directory inside a package (no __init__.py,
// litgpt/eval) has the nearest enclosing package's, and no relative prefix:
// it may be run or imported otherwise, so it imports by absolute name or not
// at all (kit.HelperFrom). A package reached only through a namespace
// directory (dinov2's segmentation_m2f/ops/modules) is its own top: code
// may import it on its own (Deformable-DETR's ops are), where a relative
// import past it fails. A file may import the helper module of any top
// package of the tree by absolute name, its own package's first
// (rule.Layout.Tops): a test package importing timm uses timm's.
func layoutOf(rel string, pkgs map[string]bool) (rule.Layout, string) {
	dir := path.Dir(rel)
	start := dir
	for !pkgs[start] && start != "." {
		start = path.Dir(start)
	}
	if !pkgs[start] {
		l := rule.Layout{Tree: true}
		for _, top := range topPackages(pkgs) {
			l.Tops = append(l.Tops, topNames(top, pkgs)...)
		}
		return l, ""
	}
	top, up := start, 0
	for top != "." && pkgs[path.Dir(top)] {
		top = path.Dir(top)
		up++
	}
	l := rule.Layout{Tree: true, Tops: topNames(top, pkgs)}
	for _, other := range topPackages(pkgs) {
		if other != top {
			l.Tops = append(l.Tops, topNames(other, pkgs)...)
		}
	}
	if start == dir {
		l.Package = strings.Repeat(".", up+1)
	}
	return l, path.Join(top, helperFile)
}

// topPackages are the tree's top packages, sorted: the package directories
// whose parent is none (the root excluded: its import name is not the
// tree's to say).
func topPackages(pkgs map[string]bool) []string {
	var tops []string
	for d, pkg := range pkgs {
		if pkg && d != "." && !pkgs[path.Dir(d)] {
			tops = append(tops, d)
		}
	}
	sort.Strings(tops)
	return tops
}

// topNames are the names top package directory top may be imported by, its
// path's dotted suffixes ("src/pkg": "src.pkg", "pkg"), each checked against
// the tree's modules under it (rule.Top.Has); none for the root.
func topNames(top string, pkgs map[string]bool) []rule.Top {
	if top == "." {
		return nil
	}
	has := func(child string) bool {
		_, ok := pkgs[top+"/"+child]
		return ok
	}
	helper := path.Join(top, helperFile)
	parts := strings.Split(top, "/")
	out := make([]rule.Top, 0, len(parts))
	for i := range parts {
		out = append(out, rule.Top{Name: strings.Join(parts[i:], "."), Helper: helper, Has: has})
	}
	return out
}

// helperDoc opens a helper module pallasify writes.
const helperDoc = `"""pallasify: device helpers shared by the modules of this package (written by ` + "`pallasify migrate`" + `).

Each finds the device on first use, so importing a module of the package does not initialise the
accelerator.
"""
`

// helperSource returns the helper module holding defs: old (the module as
// the tree has it, nil when absent) with the definitions and imports it
// lacks appended, or nil when it lacks none.
func helperSource(old []byte, defs []rule.Shared) []byte {
	sort.SliceStable(defs, func(i, j int) bool {
		if defs[i].Key != defs[j].Key {
			return defs[i].Key < defs[j].Key
		}
		return defs[i].Name < defs[j].Name
	})
	var imports, blocks []string
	seenImport := map[string]bool{}
	seenDef := map[string]bool{}
	for _, d := range defs {
		text := strings.TrimRight(d.Text, "\n") + "\n"
		if seenDef[d.Name] || (old != nil && (bytes.Contains(old, []byte(strings.TrimSpace(text))) || defines(old, d.Name))) {
			continue
		}
		seenDef[d.Name] = true
		blocks = append(blocks, text)
		for _, im := range d.Imports {
			if !seenImport[im] && !hasLine(old, im) {
				seenImport[im] = true
				imports = append(imports, im)
			}
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	sort.Strings(imports)
	body := strings.Join(blocks, "\n\n")
	if old == nil {
		return []byte(helperDoc + "\n" + importGroups(imports) + "\n\n" + body)
	}
	out := append([]byte(nil), old...)
	if len(imports) > 0 {
		at := afterLastImport(out)
		out = append(out[:at:at], append([]byte(strings.Join(imports, "\n")+"\n"), out[at:]...)...)
	}
	out = append(bytes.TrimRight(out, "\n"), []byte("\n\n\n"+body)...)
	return out
}

// importGroups joins import lines as isort would: the standard library's
// first, then a blank line and the others (torch).
func importGroups(lines []string) string {
	var std, other []string
	for _, l := range lines {
		mod := strings.Fields(l)
		if len(mod) > 1 && stdlib[strings.SplitN(mod[1], ".", 2)[0]] {
			std = append(std, l)
		} else {
			other = append(other, l)
		}
	}
	var groups []string
	for _, g := range [][]string{std, other} {
		if len(g) > 0 {
			groups = append(groups, strings.Join(g, "\n")+"\n")
		}
	}
	return strings.Join(groups, "\n")
}

// stdlib are the standard-library modules shared definitions import.
var stdlib = map[string]bool{"contextlib": true, "dataclasses": true, "functools": true, "os": true}

// defines reports whether src holds a top-level definition of name (a def,
// a class or an assignment): a helper module an earlier version wrote keeps
// its definition, whatever its text.
func defines(src []byte, name string) bool {
	for _, l := range bytes.Split(src, []byte("\n")) {
		for _, p := range []string{"def " + name + "(", "class " + name + "(", "class " + name + ":", name + " = "} {
			if bytes.HasPrefix(l, []byte(p)) {
				return true
			}
		}
	}
	return false
}

// hasLine reports whether src holds line as one whole line.
func hasLine(src []byte, line string) bool {
	for _, l := range bytes.Split(src, []byte("\n")) {
		if string(bytes.TrimSpace(l)) == line {
			return true
		}
	}
	return false
}

// afterLastImport is the offset just after the last top-level import line of
// src (0 when it has none).
func afterLastImport(src []byte) int {
	at, off := 0, 0
	for _, l := range bytes.SplitAfter(src, []byte("\n")) {
		off += len(l)
		if bytes.HasPrefix(l, []byte("import ")) || bytes.HasPrefix(l, []byte("from ")) {
			at = off
		}
	}
	return at
}

// addHelperModules writes the shared definitions the rewritten files import
// (st.shared, by helper path) into the run: a new generated file, or the
// tree's own helper module with what it lacks appended.
func (st *state) addHelperModules(r *Run) {
	if len(st.shared) == 0 {
		return
	}
	// A definition a file imports by absolute name from another package's
	// helper module (Shared.Helper: a loose script importing timm's) goes
	// there.
	for p, defs := range st.shared {
		kept := defs[:0:0]
		for _, d := range defs {
			if d.Helper != "" && d.Helper != p {
				st.shared[d.Helper] = append(st.shared[d.Helper], d)
				continue
			}
			kept = append(kept, d)
		}
		st.shared[p] = kept
	}
	delete(st.shared, "")
	byPath := map[string]*File{}
	for _, f := range r.Files {
		byPath[f.Path] = f
	}
	paths := make([]string, 0, len(st.shared))
	for p := range st.shared {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := byPath[p]
		var old []byte
		if f != nil {
			old = f.Updated
			if old == nil {
				b, err := repofs.ReadFile(r.Root, p, DefaultMaxFileBytes)
				if err != nil {
					f.Diagnostics = append(f.Diagnostics, Diagnostic{Code: CodeUnreadable, Severity: SevError, Path: p,
						Message: "the package's helper module could not be read, so the definitions its modules import are missing: " + err.Error()})
					continue
				}
				old = b
			}
		}
		content := helperSource(old, st.shared[p])
		if content == nil {
			continue
		}
		if f != nil {
			if f.Original == nil {
				f.Original = old
			}
			f.Updated = content
			continue
		}
		r.Files = append(r.Files, &File{Path: p, Lang: LangPython, Generated: true, Updated: content, Mode: 0o644,
			Bytes: int64(len(content)), Lines: countLines(content)})
	}
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
}
