package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/pallasify/pallasify/transforms/safefs"
)

// Patch returns the run's changes as a git-style unified diff: one
// `diff --git a/p b/p` section per changed file, in path order, with
// new-file headers for generated files, so `git apply` takes it.
func (r *Run) Patch() []byte {
	var b bytes.Buffer
	r.WritePatch(&b)
	return b.Bytes()
}

// WritePatch streams the patch Patch returns, one file at a time, so a large
// run never holds the whole diff in memory.
func (r *Run) WritePatch(w io.Writer) error {
	var b bytes.Buffer
	for _, f := range r.Files {
		if !f.Changed() {
			continue
		}
		b.Reset()
		writeFileDiff(&b, f)
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// EachFileDiff calls fn with each of files and its FileDiff, in the order
// of files, one call at a time. The diffs are made on every core, at most
// two per core ahead of fn, so a large run never holds the whole diff. The
// first error fn returns stops the calls and is returned.
func EachFileDiff(files []*File, fn func(f *File, diff string) error) error {
	diffs := make([]chan string, len(files))
	for i := range diffs {
		diffs[i] = make(chan string, 1)
	}
	ahead := make(chan struct{}, 2*runtime.NumCPU())
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i, f := range files {
			select {
			case ahead <- struct{}{}:
			case <-stop:
				return
			}
			go func() { diffs[i] <- FileDiff(f) }()
		}
	}()
	for i, f := range files {
		d := <-diffs[i]
		<-ahead
		if err := fn(f, d); err != nil {
			return err
		}
	}
	return nil
}

// FileDiff returns the diff of one changed file ("" when unchanged).
func FileDiff(f *File) string {
	if !f.Changed() {
		return ""
	}
	var b bytes.Buffer
	writeFileDiff(&b, f)
	return b.String()
}

func writeFileDiff(b *bytes.Buffer, f *File) {
	a, bn := gitQuote("a/"+f.Path), gitQuote("b/"+f.Path)
	// git ends the ---/+++ names of a path with a space by a tab (diff.c's
	// name_a_tab), so the name's end is unambiguous.
	la, lb := a, bn
	if strings.Contains(f.Path, " ") {
		la, lb = a+"\t", bn+"\t"
	}
	if f.Generated {
		d := udiff.Unified("/dev/null", lb, "", string(f.Updated))
		if d == "" {
			return
		}
		fmt.Fprintf(b, "diff --git %s %s\nnew file mode %s\n", a, bn, gitMode(f.Mode))
		b.WriteString(d)
		return
	}
	d := udiff.Unified(la, lb, string(f.Original), string(f.Updated))
	if d == "" {
		return
	}
	fmt.Fprintf(b, "diff --git %s %s\n", a, bn)
	b.WriteString(d)
}

// gitQuote quotes a patch path exactly as git does (quote.c's
// quote_c_style with core.quotePath on, git's default): a name holding a
// double quote, a backslash, a control character, DEL or any byte above
// 0x7f is written whole between double quotes — prefix included, as in
// "a/tab\there.py" — with \a \b \t \n \v \f \r \" \\ escapes and three-digit
// octal for every other such byte; any other name is written as it is
// (spaces included). `git apply` reads both forms.
func gitQuote(name string) string {
	quote := false
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			quote = true
			break
		}
	}
	if !quote {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func gitMode(m fs.FileMode) string {
	if m&0o111 != 0 {
		return "100755"
	}
	return "100644"
}

// ChangedFiles returns the files the run rewrites or creates.
func (r *Run) ChangedFiles() []*File {
	var out []*File
	for _, f := range r.Files {
		if f.Changed() {
			out = append(out, f)
		}
	}
	return out
}

// WriteInPlace writes every changed file back into the tree atomically (a
// temporary file in the same directory, then a rename; safefs.Tree), keeping
// its mode. A changed path that is no longer a regular file, or whose parent
// directory is a symlink, is refused: nothing is written through a link.
// It returns the paths written.
func WriteInPlace(ctx context.Context, r *Run) ([]string, error) {
	tree, err := safefs.OpenTree(r.Root)
	if err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	defer tree.Close()
	var written []string
	for _, f := range r.Files {
		if !f.Changed() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return written, err
		}
		dst := filepath.Join(r.Root, filepath.FromSlash(f.Path))
		mode := f.Mode.Perm()
		if fi, err := os.Lstat(dst); err == nil {
			if !fi.Mode().IsRegular() {
				return written, fmt.Errorf("write %s: %w", f.Path, safefs.ErrNotRegular)
			}
			mode = fi.Mode().Perm()
		} else if !f.Generated {
			return written, fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := tree.WriteBytes(f.Path, f.Updated, mode); err != nil {
			return written, err
		}
		written = append(written, f.Path)
	}
	return written, nil
}

// ErrOutNotEmpty is returned by WriteTree when the destination holds files.
var ErrOutNotEmpty = errors.New("output directory exists and is not empty")

// partialMarker names the file inside a copy WriteTree is still building;
// partialInfix sits in the name of the directory holding it
// ("." + base + partialInfix + random, beside the destination).
const (
	partialMarker = ".pallasify-partial"
	partialInfix  = ".pallasify-partial-"
)

// WriteTree writes a migrated copy of the tree into dir: changed files in
// their new form, every other walked file copied as is (symlinks inside the
// tree recreated as links; those pointing out of it left out), then every
// file the walk left out that a plain copy would keep (ignored or excluded
// files: datasets, vendored code, build inputs), copied as is — only version
// control, virtual environments and caches stay behind (copySkipDir).
//
// dir must not exist or be an empty directory, and must not be the root
// itself. The copy is built in a new directory beside dir (holding a
// partialMarker file while it is incomplete) and renamed onto dir when
// whole, so dir is never half-written: a failed or cancelled run removes
// only the directory it made, and one killed with SIGKILL leaves that
// directory, which the next WriteTree into dir (or RemoveStaleOut) removes.
func WriteTree(ctx context.Context, r *Run, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	if err := checkOutDir(r.Root, abs); err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	var perm fs.FileMode = 0o755
	fi, err := os.Lstat(abs)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("out %s: exists and is not a directory (a symlink is not followed)", dir)
	case err == nil:
		if ents, err := os.ReadDir(abs); err != nil {
			return fmt.Errorf("out %s: %w", dir, err)
		} else if len(ents) > 0 {
			return fmt.Errorf("out %s: %w", dir, ErrOutNotEmpty)
		}
		perm = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("out %s: %w", dir, err)
	default:
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return fmt.Errorf("out %s: %w", dir, err)
		}
	}
	RemoveStaleOut(abs)
	stage, err := os.MkdirTemp(filepath.Dir(abs), "."+filepath.Base(abs)+partialInfix)
	if err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(stage) // the directory this run made, and only it
		}
	}()
	marker := filepath.Join(stage, partialMarker)
	if err := os.WriteFile(marker, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	tree, err := safefs.OpenTree(stage)
	if err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	defer tree.Close()
	if err := writeTreeFiles(ctx, r, tree, abs, stage); err != nil {
		return err
	}
	if err := os.Remove(marker); err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	if err := os.Chmod(stage, perm); err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	// rename(2) replaces an empty directory and refuses a non-empty one (one
	// filled since the check above); os.Rename refuses any directory.
	if err := syscall.Rename(stage, abs); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			err = ErrOutNotEmpty
		}
		return fmt.Errorf("out %s: %w", dir, err)
	}
	done = true
	return nil
}

// checkOutDir refuses an --out that is the tree itself (also through a
// symlink) or a directory the tree lies in.
func checkOutDir(root, abs string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		realRoot = root
	}
	realOut := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		realOut = r
	} else if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		realOut = filepath.Join(r, filepath.Base(abs))
	}
	switch {
	case abs == root || realOut == realRoot:
		return errors.New("the output directory is the tree itself (use --write)")
	case within(abs, root) || within(realOut, realRoot):
		return errors.New("the output directory holds the tree")
	}
	return nil
}

// RemoveStaleOut removes what a killed WriteTree into dir left beside it:
// directories named for dir that still hold their partialMarker, whose
// process is gone. It returns how many it removed.
func RemoveStaleOut(dir string) int {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return 0
	}
	parent, base := filepath.Split(abs)
	ents, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "."+base+partialInfix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		b, err := os.ReadFile(filepath.Join(p, partialMarker))
		if err != nil {
			continue // not ours, or finished: left alone
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != os.Getpid() && processAlive(pid) {
			continue // another run is building it now
		}
		if os.RemoveAll(p) == nil {
			n++
		}
	}
	return n
}

// processAlive says whether a process with pid exists (signal 0).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// writeTreeFiles copies the run's files, then the unwalked ones, into tree;
// out is the destination, stage the directory being filled (neither is
// copied into itself when it lies inside the root).
func writeTreeFiles(ctx context.Context, r *Run, tree *safefs.Tree, out, stage string) error {
	for _, f := range r.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.Skipped == CodeSymlinkOut || f.Skipped == CodeUnreadable {
			continue
		}
		src := filepath.Join(r.Root, filepath.FromSlash(f.Path))
		if within(out, src) || within(stage, src) {
			continue // an --out inside the tree must not copy itself
		}
		switch {
		case f.Mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return fmt.Errorf("out %s: %w", f.Path, err)
			}
			if err := tree.Symlink(target, f.Path); err != nil {
				return fmt.Errorf("out %w", err)
			}
		case f.Changed():
			if err := tree.WriteBytes(f.Path, f.Updated, f.Mode.Perm()); err != nil {
				return fmt.Errorf("out %w", err)
			}
		default:
			if err := tree.CopyFrom(src, f.Path, f.Mode.Perm()); err != nil {
				return fmt.Errorf("out %s: %w", f.Path, err)
			}
		}
	}
	return copyUnwalked(ctx, r, tree, out, stage)
}

// copySkipDir names the directories --out leaves behind: version control,
// virtual environments, dependency installs and caches (regenerated, never
// part of the project).
func copySkipDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", "node_modules", "venv", ".venv", "__pycache__", ".tox", ".nox",
		".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints":
		return true
	}
	return false
}

// copyUnwalked copies into tree every regular file (and symlink staying
// inside the tree) under the root that the run did not walk, as a plain copy
// would; nothing in it is rewritten. The destination, the stage and any
// partial copy another run left inside the root are not copied.
func copyUnwalked(ctx context.Context, r *Run, tree *safefs.Tree, out, stage string) error {
	walked := make(map[string]bool, len(r.Files))
	for _, f := range r.Files {
		walked[f.Path] = true
	}
	w := &walker{root: r.Root, realRoot: r.Root}
	if rr, err := filepath.EvalSymlinks(r.Root); err == nil {
		w.realRoot = rr
	}
	return filepath.WalkDir(r.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: the walk reported what it could
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == r.Root {
			return nil
		}
		if d.IsDir() {
			if copySkipDir(d.Name()) || p == out || within(out, p) || p == stage {
				return filepath.SkipDir
			}
			for _, marker := range []string{"pyvenv.cfg", partialMarker} {
				if _, err := os.Lstat(filepath.Join(p, marker)); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		rel, err := filepath.Rel(r.Root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if walked[rel] {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if !w.insideTree(p) {
				return nil
			}
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("out %s: %w", rel, err)
			}
			if err := tree.Symlink(target, rel); err != nil {
				return fmt.Errorf("out %w", err)
			}
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if err := tree.CopyFrom(p, rel, info.Mode().Perm()); err != nil {
				return fmt.Errorf("out %s: %w", rel, err)
			}
		}
		return nil
	})
}
