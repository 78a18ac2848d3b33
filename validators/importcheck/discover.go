package importcheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Module is one importable module of a tree.
type Module struct {
	// Name is the dotted name it is imported by.
	Name string `json:"name"`
	// Path is its file, relative to the tree (slashes).
	Path string `json:"path"`
	// Dir is the directory put first on sys.path for it ("" for a module of
	// a package root: the tree itself or src/): a script's own directory,
	// as `python dir/script.py` would.
	Dir string `json:"dir,omitempty"`
}

// Layout is what Discover found in a tree.
type Layout struct {
	// Roots are the package roots put on sys.path, relative ("" is the tree).
	Roots []string
	// Modules are the modules to import, package roots' first, by name.
	Modules []Module
	// Tests are the test files (test_*.py, *_test.py), left to pytest's
	// collection.
	Tests []string
	// Skipped are the .py files not imported, each with why.
	Skipped []Skip
	// Tops are the top-level names the tree provides: a missing module of
	// one of these names is the tree's own, not a missing dependency.
	Tops []string
}

// Skip is a file Discover does not import.
type Skip struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// skipDirs are directories never walked: version control, virtual
// environments, caches, build outputs.
var skipDirs = map[string]bool{"__pycache__": true, "node_modules": true, "site-packages": true,
	"venv": true, "build": true, "dist": true}

// entryPoints are files whose import runs a program, not a module.
var entryPoints = map[string]string{
	"setup.py":    "setup.py runs setuptools when imported",
	"__main__.py": "a package's __main__ runs its command line when imported",
	"conftest.py": "pytest's conftest.py is loaded by the test collection",
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var keywords = map[string]bool{"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true, "def": true, "del": true,
	"elif": true, "else": true, "except": true, "finally": true, "for": true, "from": true, "global": true,
	"if": true, "import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true}

// IsTestFile reports whether a file name is one pytest collects by default.
func IsTestFile(name string) bool {
	return strings.HasSuffix(name, ".py") && (strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py"))
}

// Discover lists the importable modules of tree from its layout. A .py
// file's module name is its path from the nearest directory above it that
// is not a package (has no __init__.py), as pytest's default import mode
// finds it: packages at the top or under src/ import by their dotted name
// with those roots on sys.path, and a script imports by its file name with
// its own directory first on sys.path. Test files are left to pytest's
// collection; setup.py, __main__.py and conftest.py are not imported (see
// entryPoints); a name Python cannot import (a dash, a leading digit) is
// skipped, with why. Links are not followed.
func Discover(tree string) (*Layout, error) {
	tree, err := filepath.Abs(tree)
	if err != nil {
		return nil, err
	}
	l := &Layout{Roots: []string{""}}
	if fi, err := os.Stat(filepath.Join(tree, "src")); err == nil && fi.IsDir() && !isPackage(filepath.Join(tree, "src")) {
		l.Roots = append(l.Roots, "src")
	}
	tops := map[string]bool{}
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: nothing to import there
		}
		rel, _ := filepath.Rel(tree, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p == tree {
				return nil
			}
			n := d.Name()
			if strings.HasPrefix(n, ".") || skipDirs[n] || strings.HasSuffix(n, ".egg-info") {
				return filepath.SkipDir
			}
			if parent := filepath.Dir(rel); parent == "." || parent == "src" && slices.Contains(l.Roots, "src") {
				tops[n] = true
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".py") {
			return nil
		}
		if IsTestFile(d.Name()) {
			l.Tests = append(l.Tests, rel)
			return nil
		}
		if why, ok := entryPoints[d.Name()]; ok {
			l.Skipped = append(l.Skipped, Skip{rel, why})
			return nil
		}
		m, why := moduleOf(tree, rel, l.Roots)
		if why != "" {
			l.Skipped = append(l.Skipped, Skip{rel, why})
			return nil
		}
		tops[strings.Split(m.Name, ".")[0]] = true
		l.Modules = append(l.Modules, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(l.Modules, func(a, b Module) int {
		if c := strings.Compare(a.Dir, b.Dir); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for t := range tops {
		l.Tops = append(l.Tops, t)
	}
	slices.Sort(l.Tops)
	return l, nil
}

func isPackage(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, "__init__.py"))
	return err == nil && fi.Mode().IsRegular()
}

// moduleOf names the module of the file rel, or says why it cannot be
// imported by name.
func moduleOf(tree, rel string, roots []string) (Module, string) {
	parts := strings.Split(strings.TrimSuffix(rel, ".py"), "/")
	// The package chain: the directories above the file that are packages.
	base := len(parts) - 1
	for base > 0 && isPackage(filepath.Join(tree, filepath.FromSlash(strings.Join(parts[:base], "/")))) {
		base--
	}
	name := parts[base:]
	if name[len(name)-1] == "__init__" {
		name = name[:len(name)-1]
		if len(name) == 0 {
			return Module{}, "the tree's own __init__.py"
		}
	}
	for _, n := range name {
		if !identRE.MatchString(n) || keywords[n] {
			return Module{}, "not an importable module name (" + n + ")"
		}
	}
	dir := strings.Join(parts[:base], "/")
	m := Module{Name: strings.Join(name, "."), Path: rel}
	if !slices.Contains(roots, dir) {
		m.Dir = dir
	}
	return m, ""
}
