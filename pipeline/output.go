package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
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
	p := quotePath(f.Path)
	if f.Generated {
		d := udiff.Unified("/dev/null", "b/"+p, "", string(f.Updated))
		if d == "" {
			return
		}
		fmt.Fprintf(b, "diff --git a/%s b/%s\nnew file mode %s\n", p, p, gitMode(f.Mode))
		b.WriteString(d)
		return
	}
	d := udiff.Unified("a/"+p, "b/"+p, string(f.Original), string(f.Updated))
	if d == "" {
		return
	}
	fmt.Fprintf(b, "diff --git a/%s b/%s\n", p, p)
	b.WriteString(d)
}

// quotePath leaves ordinary paths alone and C-quotes the rare path git would
// quote (spaces are fine unquoted for git apply when both names agree).
func quotePath(p string) string {
	if !strings.ContainsAny(p, "\"\\\t\n") {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(p) {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
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
// temporary file in the same directory, then a rename), keeping its mode.
// It returns the paths written.
func WriteInPlace(ctx context.Context, r *Run) ([]string, error) {
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
				return written, fmt.Errorf("write %s: not a regular file", f.Path)
			}
			mode = fi.Mode().Perm()
		} else if !f.Generated {
			return written, fmt.Errorf("write %s: %w", f.Path, err)
		}
		if mode == 0 {
			mode = 0o644
		}
		if f.Generated {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return written, fmt.Errorf("write %s: %w", f.Path, err)
			}
		}
		if err := WriteFileAtomic(dst, f.Updated, mode); err != nil {
			return written, err
		}
		written = append(written, f.Path)
	}
	return written, nil
}

// ErrOutNotEmpty is returned by WriteTree when the destination holds files.
var ErrOutNotEmpty = errors.New("output directory exists and is not empty")

// WriteTree writes a migrated copy of the tree into dir: changed files in
// their new form, every other walked file copied as is (symlinks inside the
// tree recreated as links; those pointing out of it left out), then every
// file the walk left out that a plain copy would keep (ignored or excluded
// files: datasets, vendored code, build inputs), copied as is — only version
// control, virtual environments and caches stay behind (copySkipDir). dir
// must not exist or be empty, and must not be the root itself.
func WriteTree(ctx context.Context, r *Run, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("out %s: %w", dir, err)
	}
	if abs == r.Root {
		return fmt.Errorf("out %s: the output directory is the tree itself (use --write)", dir)
	}
	if ents, err := os.ReadDir(abs); err == nil && len(ents) > 0 {
		return fmt.Errorf("out %s: %w", dir, ErrOutNotEmpty)
	}
	for _, f := range r.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.Skipped == CodeSymlinkOut || f.Skipped == CodeUnreadable {
			continue
		}
		dst := filepath.Join(abs, filepath.FromSlash(f.Path))
		src := filepath.Join(r.Root, filepath.FromSlash(f.Path))
		if within(abs, src) {
			continue // an --out inside the tree must not copy itself
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("out %s: %w", f.Path, err)
		}
		switch {
		case f.Mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return fmt.Errorf("out %s: %w", f.Path, err)
			}
			if err := os.Symlink(target, dst); err != nil {
				return fmt.Errorf("out %s: %w", f.Path, err)
			}
		case f.Changed():
			mode := f.Mode.Perm()
			if mode == 0 {
				mode = 0o644
			}
			if err := WriteFileAtomic(dst, f.Updated, mode); err != nil {
				return err
			}
		default:
			if err := copyFile(src, dst, f.Mode.Perm()); err != nil {
				return fmt.Errorf("out %s: %w", f.Path, err)
			}
		}
	}
	return copyUnwalked(ctx, r, abs)
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

// copyUnwalked copies into out every regular file (and symlink staying
// inside the tree) under the root that the run did not walk, as a plain copy
// would; nothing in it is rewritten.
func copyUnwalked(ctx context.Context, r *Run, out string) error {
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
			if copySkipDir(d.Name()) || p == out || within(out, p) {
				return filepath.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(p, "pyvenv.cfg")); err == nil {
				return filepath.SkipDir
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
		dst := filepath.Join(out, filepath.FromSlash(rel))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if !w.insideTree(p) {
				return nil
			}
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("out %s: %w", rel, err)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("out %s: %w", rel, err)
			}
			if err := os.Symlink(target, dst); err != nil {
				return fmt.Errorf("out %s: %w", rel, err)
			}
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("out %s: %w", rel, err)
			}
			if err := copyFile(p, dst, info.Mode().Perm()); err != nil {
				return fmt.Errorf("out %s: %w", rel, err)
			}
		}
		return nil
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if mode == 0 {
		mode = 0o644
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so readers see the old or the new file, never half
// of one. The file gets mode (permission bits).
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) error {
	return WriteAtomic(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic is WriteFileAtomic for content produced by fill.
func WriteAtomic(path string, mode fs.FileMode, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".pallasify-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(tmp, 64<<10)
	if err := fill(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(mode.Perm()); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
