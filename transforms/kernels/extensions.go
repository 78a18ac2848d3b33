package kernels

import (
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Extension origins beyond the kernel origins (load_inline, load,
// cuda-extension).
const (
	// OriginPybindTree is an extension with no build call the analysis can
	// read: a PYBIND11_MODULE source whose directory (and its cuda/ and cpu/
	// subdirectories) holds the sources, the mmcv layout (setup.py globs
	// csrc/pytorch/*.cpp and cuda/*.cu into mmcv._ext).
	OriginPybindTree = "pybind-tree"
)

// Extension is a compiled extension as the repository builds it: enough to
// build the same sources for the CPU against the emulator.
type Extension struct {
	Origin string `json:"origin"` // load_inline, load, cuda-extension, pybind-tree
	// Module is the Python module name the repository imports it as
	// ("mmcv._ext", or load_inline's name=).
	Module string `json:"module"`
	// By is the Python file with the build call (setup.py, the module calling
	// load/load_inline); for a pybind tree, the PYBIND11_MODULE source.
	By   string `json:"by"`
	Line int    `json:"line,omitempty"`
	// Sources are repo-relative .cpp/.cc/.cu files (load, CUDAExtension,
	// pybind tree); IncludeDirs the repo-relative -I directories.
	Sources     []string          `json:"sources,omitempty"`
	IncludeDirs []string          `json:"include_dirs,omitempty"`
	Defines     map[string]string `json:"defines,omitempty"`
	// CPP, CUDA and Functions are load_inline's cpp_sources, cuda_sources
	// and functions.
	CPP       []string `json:"cpp,omitempty"`
	CUDA      []string `json:"cuda,omitempty"`
	Functions []string `json:"functions,omitempty"`
	// Tree is the directory whose kernels belong to a pybind tree.
	Tree string `json:"tree,omitempty"`
	// Wrappers are the Python files that load the extension (their callers
	// are what the repository's tests exercise).
	Wrappers []string `json:"wrappers,omitempty"`
	// Problem says why the extension cannot be described fully ("" when it
	// can): a source list that is computed, a name that is not a literal.
	Problem string `json:"problem,omitempty"`
}

// Owns reports whether kernel k is compiled into the extension: its file is
// a source, is included by one (by base name), or lies in the pybind tree;
// a load_inline kernel lives in the Python file with the call.
func (e *Extension) Owns(root string, k *Kernel) bool {
	switch e.Origin {
	case OriginLoadInline:
		return k.Origin == OriginLoadInline && k.Path == e.By
	case OriginPybindTree:
		return strings.HasPrefix(k.Path, e.Tree+"/")
	}
	for _, s := range e.Sources {
		if s == k.Path {
			return true
		}
	}
	base := path.Base(k.Path)
	rfs, err := repofs.Open(root)
	if err != nil {
		return false
	}
	defer rfs.Close()
	for _, s := range e.Sources {
		b, err := rfs.ReadFile(s, maxSource)
		if err == nil && includesBase(string(b), base) {
			return true
		}
	}
	return false
}

var includeLineRE = regexp.MustCompile(`(?m)^\s*#\s*include\s*["<]([^">]+)[">]`)

func includesBase(src, base string) bool {
	for _, m := range includeLineRE.FindAllStringSubmatch(src, -1) {
		if path.Base(m[1]) == base {
			return true
		}
	}
	return false
}

// inlineExtension describes a load_inline call.
func (pf *pyFile) inlineExtension(n *ts.Node) *Extension {
	e := &Extension{Origin: OriginLoadInline, By: pf.rel, Line: pf.line(n), Wrappers: []string{pf.rel}}
	e.Module, e.Problem = pf.literalArg(n, "name", 0)
	for _, f := range []struct {
		kw  string
		pos int
		out *[]string
	}{{"cpp_sources", 1, &e.CPP}, {"cuda_sources", 2, &e.CUDA}, {"functions", 3, &e.Functions}} {
		v := pf.arg(n, f.kw, f.pos)
		if v == nil {
			continue
		}
		for _, s := range pf.strings(v) {
			if s.err != "" {
				e.Problem = f.kw + ": " + s.err
				continue
			}
			*f.out = append(*f.out, s.text)
		}
	}
	return e
}

// extension describes a load(...) or CUDAExtension(...) call; the caller
// adds the sources it resolves.
func (pf *pyFile) extension(n *ts.Node, origin, short string) *Extension {
	e := &Extension{Origin: origin, By: pf.rel, Line: pf.line(n)}
	if origin == OriginLoad {
		e.Wrappers = []string{pf.rel}
	}
	e.Module, e.Problem = pf.literalArg(n, "name", 0)
	kw := "include_dirs"
	if short == "load" {
		kw = "extra_include_paths"
	}
	if v := pf.arg(n, kw, -1); v != nil {
		items := []*ts.Node{v}
		if v.Type() == "list" || v.Type() == "tuple" {
			items = ts.Children(v)
		}
		for _, it := range items {
			if p, err := pf.pathOf(it, 0); err == nil {
				e.IncludeDirs = appendOne(e.IncludeDirs, p)
			}
		}
	}
	return e
}

func (pf *pyFile) literalArg(n *ts.Node, kw string, pos int) (string, string) {
	v := pf.arg(n, kw, pos)
	if v == nil {
		return "", kw + "= not given"
	}
	if ss := pf.strings(v); len(ss) == 1 && ss[0].err == "" {
		return ss[0].text, ""
	}
	return "", kw + "= is not a string literal"
}

var (
	pybindRE     = regexp.MustCompile(`PYBIND11_MODULE\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,`)
	withCUDARE   = regexp.MustCompile(`#\s*if(?:def\s+|\s+defined\s*\(?\s*)([A-Z][A-Z0-9_]*WITH_CUDA)\b`)
	loadExtRE    = regexp.MustCompile(`load_ext\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]`)
	importModRE  = regexp.MustCompile(`import_module\(\s*['"]([A-Za-z_][A-Za-z0-9_.]*)\.['"]\s*\+`)
	sourceSuffix = []string{".cpp", ".cc", ".cu"}
	headerSuffix = []string{".h", ".hpp", ".cuh", ".hh"}
)

func hasSuffix(p string, sfx []string) bool {
	for _, s := range sfx {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}

// FindExtensions lists the extensions of the tree: the build calls the
// Python scan found in inv plus pybind trees (a PYBIND11_MODULE source with
// no build call naming it), with the Python wrappers that load each one.
// files are the repo-relative paths the walk found (Python files are read
// for wrappers); the tree is walked for C++ sources.
//
// Every file is read through the root boundary (repofs): a source or header
// whose real path leaves root is not read.
func FindExtensions(root string, inv *Inventory, files []string) []*Extension {
	exts := append([]*Extension(nil), inv.Extensions...)
	rfs, err := repofs.Open(root)
	if err != nil {
		return exts
	}
	defer rfs.Close()
	named := map[string]bool{}
	for _, e := range exts {
		for _, s := range e.Sources {
			named[s] = true
		}
	}
	for _, pb := range pybindSources(rfs) {
		if named[pb] {
			continue
		}
		exts = append(exts, pybindTree(rfs, pb, files))
	}
	for _, e := range exts {
		if e.Origin == OriginCUDAExtension && e.Module != "" {
			e.Wrappers = importers(rfs, e.Module, files)
		}
	}
	sort.SliceStable(exts, func(i, j int) bool { return exts[i].By < exts[j].By })
	return exts
}

// importers are the Python files importing module ("pkg._C": import pkg._C,
// from pkg import _C, from . import _C inside pkg).
func importers(rfs *repofs.Root, module string, files []string) []string {
	pkg, leaf := "", module
	if i := strings.LastIndexByte(module, '.'); i >= 0 {
		pkg, leaf = module[:i], module[i+1:]
	}
	pats := []*regexp.Regexp{regexp.MustCompile(`(?m)^\s*import\s+` + regexp.QuoteMeta(module) + `\b`)}
	if pkg != "" {
		pats = append(pats, regexp.MustCompile(`(?m)^\s*from\s+`+regexp.QuoteMeta(pkg)+`\s+import\s+.*\b`+regexp.QuoteMeta(leaf)+`\b`))
	}
	local := regexp.MustCompile(`(?m)^\s*from\s+\.\s+import\s+.*\b` + regexp.QuoteMeta(leaf) + `\b`)
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".py") || path.Base(f) == "setup.py" {
			continue
		}
		b, err := rfs.ReadFile(f, maxSource)
		if err != nil {
			continue
		}
		hit := false
		for _, re := range pats {
			hit = hit || re.Match(b)
		}
		if !hit && pkg != "" && ModuleName(path.Dir(f)) == pkg {
			hit = local.Match(b)
		}
		if hit {
			out = append(out, f)
		}
	}
	return out
}

// pybindSources are the C++ files under the root defining a PYBIND11_MODULE.
func pybindSources(rfs *repofs.Root) []string {
	var out []string
	_ = rfs.WalkDir(".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := de.Name()
		if de.IsDir() {
			if p != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "venv" || name == "build" || name == "__pycache__") {
				return fs.SkipDir
			}
			return nil
		}
		if !hasSuffix(name, []string{".cpp", ".cc", ".cu"}) {
			return nil
		}
		b, err := rfs.ReadFile(p, maxSource)
		if err == nil && pybindRE.Match(b) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// pybindTree describes the extension around a PYBIND11_MODULE source pb:
// the sources of its directory and of its cuda/ and cpu/ subdirectories,
// every header directory under the parent (csrc/common, csrc/common/cuda),
// the WITH_CUDA macros its sources test, and the module name from the
// Python loader (mmcv: import_module('mmcv.' + name) with load_ext('_ext')).
func pybindTree(rfs *repofs.Root, pb string, files []string) *Extension {
	dir := path.Dir(pb)
	tree := path.Dir(dir)
	e := &Extension{Origin: OriginPybindTree, By: pb, Tree: tree, Defines: map[string]string{}}
	for _, d := range []string{dir, path.Join(dir, "cuda"), path.Join(dir, "cpu")} {
		ents, err := rfs.ReadDir(d)
		if err != nil {
			continue
		}
		for _, de := range ents {
			if !de.IsDir() && hasSuffix(de.Name(), sourceSuffix) {
				e.Sources = append(e.Sources, path.Join(d, de.Name()))
			}
		}
	}
	_ = rfs.WalkDir(tree, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !hasSuffix(de.Name(), headerSuffix) {
			return nil
		}
		if _, err := rfs.Stat(p); err != nil {
			return nil // a header link leading out of the tree: no -I for it
		}
		e.IncludeDirs = appendOne(e.IncludeDirs, path.Dir(p))
		return nil
	})
	sort.Strings(e.IncludeDirs)
	for _, s := range e.Sources {
		if b, err := rfs.ReadFile(s, maxSource); err == nil {
			for _, m := range withCUDARE.FindAllStringSubmatch(string(b), -1) {
				e.Defines[m[1]] = "1"
			}
			if m := pybindRE.FindStringSubmatch(string(b)); m != nil && m[1] != "TORCH_EXTENSION_NAME" && e.Module == "" {
				e.Module = m[1]
			}
		}
	}
	e.Module, e.Wrappers = pybindModule(rfs, e.Module, files)
	if e.Module == "" {
		e.Problem = "the module name of " + pb + " is not a literal and no Python loader names it"
	}
	return e
}

// pybindModule finds the module name through the Python loader and the
// wrappers calling load_ext('<name>', ...).
func pybindModule(rfs *repofs.Root, literal string, files []string) (string, []string) {
	prefix, name := "", ""
	var wrappers []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".py") {
			continue
		}
		b, err := rfs.ReadFile(f, maxSource)
		if err != nil {
			continue
		}
		src := string(b)
		if m := importModRE.FindStringSubmatch(src); m != nil && prefix == "" {
			prefix = m[1]
		}
		if m := loadExtRE.FindStringSubmatch(src); m != nil && !strings.Contains(src, "def load_ext") {
			name = m[1]
			wrappers = append(wrappers, f)
		}
	}
	switch {
	case literal != "":
		return literal, wrappers
	case name != "" && prefix != "":
		return prefix + "." + name, wrappers
	case name != "":
		return name, wrappers
	}
	return "", wrappers
}

// ModuleName is the dotted Python module of a repo-relative .py file
// ("mmcv/ops/roi_align.py" → "mmcv.ops.roi_align").
func ModuleName(rel string) string {
	rel = strings.TrimSuffix(rel, ".py")
	rel = strings.TrimSuffix(rel, "/__init__")
	return strings.ReplaceAll(rel, "/", ".")
}
