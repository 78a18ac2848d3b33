package pipeline

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/pallasify/pallasify/transforms/files"
	"github.com/pallasify/pallasify/transforms/repofs"
)

// Language labels for File.Lang.
const (
	LangPython   = "python"
	LangNotebook = "notebook"
	LangCUDA     = "cuda"
	// LangProject is a file the project rules read (transforms/files): a
	// requirement set, a Dockerfile, a launcher, a CI workflow, a config.
	LangProject = "project"
	LangOther   = "other"
)

// langOf classifies a file by its extension (a project file by its name and
// place: name is the path relative to the root).
func langOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".py", ".pyi":
		return LangPython
	case ".ipynb":
		return LangNotebook
	case ".cu", ".cuh":
		return LangCUDA
	}
	if files.KindOf(name) != "" {
		return LangProject
	}
	return LangOther
}

// skipDirs are directory names never descended into: version control,
// dependencies installed into the tree, virtual environments and caches.
// A directory holding a pyvenv.cfg is skipped too, whatever its name.
func skipDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", "node_modules", "site-packages", "dist-packages",
		"venv", ".venv", "vendor", "_vendor", "__pycache__", ".tox", ".nox",
		".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints":
		return true
	}
	return false
}

// entry is one walked path.
type entry struct {
	rel  string // slash-separated, relative to the root
	abs  string
	size int64
	mode fs.FileMode
	diag *Diagnostic // set when the walk itself has something to say
}

// walker walks a tree honouring .gitignore files, the skip list and the
// include/exclude globs; inside a git work tree, git's index decides over
// .gitignore: a tracked file is walked even when a pattern matches it. It
// never follows symlinks.
type walker struct {
	root     string   // absolute, cleaned
	realRoot string   // root with symlinks resolved
	prefix   []string // the root's path from the git work tree's top, when inside one
	include  []string
	exclude  []string
	tracked  *tracked // git's index, when the root is in a work tree: tracked files are walked even when ignored
	out      []entry
}

func walkTree(ctx context.Context, root string, include, exclude []string) ([]entry, error) {
	w := &walker{root: root, realRoot: root, include: include, exclude: exclude}
	if rr, err := filepath.EvalSymlinks(root); err == nil {
		w.realRoot = rr
	}
	// When the root lies inside a git work tree, the .gitignore files between
	// the work tree's top and the root apply too, as git applies them.
	top := gitTop(w.realRoot)
	if top == "" {
		top = w.realRoot
	}
	if rel, err := filepath.Rel(top, w.realRoot); err == nil && rel != "." {
		w.prefix = strings.Split(filepath.ToSlash(rel), "/")
	}
	base := enclosingIgnores(top, w.prefix)
	if ignoredRoot(base, w.prefix) {
		// The root itself is ignored by the work tree around it (a .bench/ or
		// build/ folder of another project): the user named it, so it is walked
		// as a tree of its own, as ruff and ripgrep treat a path they are given.
		top, w.prefix = w.realRoot, nil
		base = enclosingIgnores(top, nil)
	}
	w.tracked = readTracked(top)
	if err := w.dirs(ctx, root, base); err != nil {
		return nil, err
	}
	sort.Slice(w.out, func(i, j int) bool { return w.out[i].rel < w.out[j].rel })
	return w.out, nil
}

// enclosingIgnores reads the ignore patterns that apply at the root: the work
// tree's info/exclude and the .gitignore files from its top down to the
// root's parent (prefix is the root's path from top).
func enclosingIgnores(top string, prefix []string) []gitignore.Pattern {
	var base []gitignore.Pattern
	if ps, err := readIgnore(filepath.Join(top, ".git", "info", "exclude"), nil); err == nil {
		base = ps
	}
	for i := 0; i < len(prefix); i++ {
		dir := filepath.Join(append([]string{top}, prefix[:i]...)...)
		if ps, err := readIgnore(filepath.Join(dir, ".gitignore"), prefix[:i]); err == nil {
			base = append(base, ps...)
		}
	}
	return base
}

// ignoredRoot reports whether the root (prefix, from the work tree's top) or
// a folder above it is ignored by patterns.
func ignoredRoot(patterns []gitignore.Pattern, prefix []string) bool {
	if len(prefix) == 0 || len(patterns) == 0 {
		return false
	}
	m := gitignore.NewMatcher(patterns)
	for i := 1; i <= len(prefix); i++ {
		if m.Match(prefix[:i], true) {
			return true
		}
	}
	return false
}

// gitTop returns the nearest directory at or above dir that holds a .git
// entry, or "".
func gitTop(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// repoParts returns parts (relative to the root) as parts relative to the
// git work tree's top, which is what the ignore patterns are anchored to.
func (w *walker) repoParts(parts []string) []string {
	if len(w.prefix) == 0 {
		return parts
	}
	return append(append(make([]string, 0, len(w.prefix)+len(parts)), w.prefix...), parts...)
}

// subdir is a directory the walk goes into, with the patterns that apply
// in it.
type subdir struct {
	abs      string
	parts    []string
	patterns []gitignore.Pattern
}

// dirs walks the directories under root on every core: a goroutine per
// directory, at most one per CPU reading at a time. The entries land in
// w.out in no set order; walkTree sorts them.
func (w *walker) dirs(ctx context.Context, root string, base []gitignore.Pattern) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, runtime.NumCPU())
	var spawn func(d subdir)
	spawn = func(d subdir) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			out, subs, err := w.dir(ctx, d.abs, d.parts, d.patterns)
			<-sem
			mu.Lock()
			w.out = append(w.out, out...)
			if err != nil && first == nil {
				first = err
			}
			mu.Unlock()
			for _, s := range subs {
				spawn(s)
			}
		}()
	}
	spawn(subdir{abs: root, patterns: base})
	wg.Wait()
	return first
}

// dir reads one directory: its entries, and the subdirectories to walk.
func (w *walker) dir(ctx context.Context, abs string, parts []string, patterns []gitignore.Pattern) (out []entry, subs []subdir, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if ps, err := readIgnore(filepath.Join(abs, ".gitignore"), w.repoParts(parts)); err == nil && len(ps) > 0 {
		patterns = append(append([]gitignore.Pattern(nil), patterns...), ps...)
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		rel := strings.Join(parts, "/")
		out = append(out, entry{rel: rel, abs: abs, diag: &Diagnostic{Code: CodeUnreadable, Severity: SevError,
			Path: rel, Message: "directory could not be read: " + err.Error()}})
		return out, nil, nil
	}
	m := gitignore.NewMatcher(patterns)
	for _, de := range ents {
		name := de.Name()
		childParts := append(append(make([]string, 0, len(parts)+1), parts...), name)
		rel := strings.Join(childParts, "/")
		cabs := filepath.Join(abs, name)
		typ := de.Type()
		isDir := typ.IsDir()
		if len(patterns) > 0 && m.Match(w.repoParts(childParts), isDir) && !w.tracked.has(w.repoParts(childParts), isDir) {
			continue
		}
		if isDir {
			if skipDir(name) || matchAny(w.exclude, rel) {
				continue
			}
			if _, err := os.Lstat(filepath.Join(cabs, "pyvenv.cfg")); err == nil {
				continue
			}
			subs = append(subs, subdir{abs: cabs, parts: childParts, patterns: patterns})
			continue
		}
		if matchAny(w.exclude, rel) || (len(w.include) > 0 && !matchAny(w.include, rel)) {
			continue
		}
		switch {
		case typ&fs.ModeSymlink != 0:
			e := entry{rel: rel, abs: cabs, mode: fs.ModeSymlink | 0o777}
			if !w.insideTree(cabs) {
				e.diag = &Diagnostic{Code: CodeSymlinkOut, Severity: SevWarning, Path: rel,
					Message: "symlink points outside the tree (or nowhere); not followed, left untouched"}
			}
			out = append(out, e)
		case typ.IsRegular():
			info, err := de.Info()
			if err != nil {
				out = append(out, entry{rel: rel, abs: cabs, diag: &Diagnostic{Code: CodeUnreadable,
					Severity: SevError, Path: rel, Message: "file could not be read: " + err.Error()}})
				continue
			}
			out = append(out, entry{rel: rel, abs: cabs, size: info.Size(), mode: info.Mode()})
		default:
			// sockets, devices, pipes: not source.
		}
	}
	return out, subs, nil
}

// insideTree reports whether the symlink at p resolves inside the root: its
// real path, every link on the way followed (a chain of links, a link into
// a directory that is itself a link), lies under the root's real path. A
// dangling link, or a loop, is not inside.
func (w *walker) insideTree(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	return within(w.realRoot, real)
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readIgnore parses one .gitignore-style file; domain is the directory it
// applies to, as path parts from the root.
//
// As git does, it does not follow a .gitignore that is a symlink (it could
// name a host file, or a FIFO the walk would block on).
func readIgnore(file string, domain []string) ([]gitignore.Pattern, error) {
	f, err := repofs.OpenRegular(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return ps, err
	}
	return ps, nil
}

// matchAny reports whether rel matches one of the globs. A glob without a
// slash matches the base name or any single path component; a glob with a
// slash matches the whole relative path; "**" matches any number of
// directories; a glob also matches everything under a directory it matches.
func matchAny(globs []string, rel string) bool {
	for _, g := range globs {
		if matchGlob(g, rel) {
			return true
		}
	}
	return false
}

func matchGlob(glob, rel string) bool {
	glob = strings.TrimPrefix(strings.TrimSuffix(glob, "/"), "./")
	if glob == "" {
		return false
	}
	parts := strings.Split(rel, "/")
	if !strings.Contains(glob, "/") {
		for _, p := range parts {
			if ok, _ := path.Match(glob, p); ok {
				return true
			}
		}
		return false
	}
	gp := strings.Split(glob, "/")
	for n := len(parts); n >= 1; n-- { // the path or one of its parent directories
		if matchParts(gp, parts[:n]) {
			return true
		}
	}
	return false
}

func matchParts(glob, parts []string) bool {
	if len(glob) == 0 {
		return len(parts) == 0
	}
	if glob[0] == "**" {
		for i := 0; i <= len(parts); i++ {
			if matchParts(glob[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	if ok, _ := path.Match(glob[0], parts[0]); !ok {
		return false
	}
	return matchParts(glob[1:], parts[1:])
}
