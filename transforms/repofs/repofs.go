// Package repofs reads a repository's files without leaving the repository.
//
// Every reader of repository files that runs outside the sandbox (the walk,
// kernel discovery, the capture stage, the prompts of the LLM drafter) opens
// them through a Root: a path is resolved under the root with every symlink
// followed, and refused when its real path leaves the root (ErrOutside) or
// names something other than a regular file (ErrNotRegular: a FIFO or a device
// would block a read or change the machine's state). A symlink whose target
// stays inside the tree keeps working, absolute or relative.
//
// The open itself goes through os.Root, so a link swapped in between the
// check and the open cannot escape either.
package repofs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

var (
	// ErrOutside: the path, or a symlink on the way to it, resolves outside
	// the root.
	ErrOutside = errors.New("resolves outside the repository")
	// ErrNotRegular: the path is a FIFO, socket, device or directory.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than the reader's limit.
	ErrTooLarge = errors.New("file too large")
)

// Root is an open repository root. Its methods take slash-separated paths
// relative to it. A Root is safe for concurrent use.
type Root struct {
	dir  string // as given, absolute
	real string // dir with its own symlinks resolved
	root *os.Root
}

// Open opens dir as a root.
func Open(dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &Root{dir: abs, real: real, root: r}, nil
}

// Close releases the root's directory handle.
func (r *Root) Close() error { return r.root.Close() }

// Dir is the root's directory as given to Open (made absolute).
func (r *Root) Dir() string { return r.dir }

// resolve returns rel's real path relative to the real root, every symlink
// followed, or an error wrapping ErrOutside when it leaves the root.
func (r *Root) resolve(rel string) (string, error) {
	clean := path.Clean(filepath.ToSlash(rel))
	if clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean) || filepath.IsAbs(rel) {
		return "", &fs.PathError{Op: "open", Path: rel, Err: ErrOutside}
	}
	full, err := filepath.EvalSymlinks(filepath.Join(r.real, filepath.FromSlash(clean)))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	in, ok := Within(r.real, full)
	if !ok {
		return "", &fs.PathError{Op: "open", Path: rel, Err: ErrOutside}
	}
	return in, nil
}

// Within returns p relative to root when p (already resolved) lies at or
// under root.
func Within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// Stat returns the info of what rel resolves to inside the root: a regular
// file or a directory. Anything else, or a path leaving the root, is an
// error (ErrNotRegular, ErrOutside).
func (r *Root) Stat(rel string) (fs.FileInfo, error) {
	in, err := r.resolve(rel)
	if err != nil {
		return nil, err
	}
	fi, err := r.root.Stat(in)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, &fs.PathError{Op: "stat", Path: rel, Err: ErrNotRegular}
	}
	return fi, nil
}

// Open opens the regular file rel resolves to inside the root, for reading.
func (r *Root) Open(rel string) (*os.File, error) {
	in, err := r.resolve(rel)
	if err != nil {
		return nil, err
	}
	// Refuse before opening: opening a device can act on it (a tape rewinds).
	fi, err := r.root.Stat(in)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: ErrNotRegular}
	}
	// O_NONBLOCK: a FIFO swapped in after the check does not block the open;
	// the check on the open file below refuses it.
	f, err := r.root.OpenFile(in, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &fs.PathError{Op: "open", Path: rel, Err: ErrNotRegular}
		}
		return nil, err
	}
	return f, nil
}

// ReadFile reads the regular file rel resolves to inside the root, refusing
// one larger than limit bytes (limit <= 0: no limit).
func (r *Root) ReadFile(rel string, limit int64) ([]byte, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if limit > 0 && fi.Size() > limit {
		return nil, &fs.PathError{Op: "read", Path: rel, Err: fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrTooLarge, fi.Size(), limit)}
	}
	rd := io.Reader(f)
	if limit > 0 {
		rd = io.LimitReader(f, limit+1)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	if limit > 0 && int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: rel, Err: fmt.Errorf("%w: grew over the %d-byte limit", ErrTooLarge, limit)}
	}
	return b, nil
}

// ReadDir lists the directory rel resolves to inside the root. The entries
// are not followed: a symlink among them is listed as one.
func (r *Root) ReadDir(rel string) ([]fs.DirEntry, error) {
	in, err := r.resolve(rel)
	if err != nil {
		return nil, err
	}
	return fs.ReadDir(r.root.FS(), filepath.ToSlash(in))
}

// WalkDir walks the tree under rel as fs.WalkDir does, without following
// symlinks to directories; the paths given to fn are relative to the root,
// slash-separated. Read each file through the Root, which refuses a link
// leading out.
func (r *Root) WalkDir(rel string, fn fs.WalkDirFunc) error {
	in, err := r.resolve(rel)
	if err != nil {
		return err
	}
	start, given := filepath.ToSlash(in), path.Clean(filepath.ToSlash(rel))
	return fs.WalkDir(r.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if given != start {
			// rel went through an in-tree link: report the paths under rel.
			sub := p
			if start != "." {
				sub = strings.TrimPrefix(strings.TrimPrefix(p, start), "/")
			}
			p = path.Join(given, sub)
		}
		return fn(p, d, err)
	})
}

// ReadFile reads rel under dir through a Root opened for the call (see
// Root.ReadFile); for a reader of one or two files.
func ReadFile(dir, rel string, limit int64) ([]byte, error) {
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(rel, limit)
}

// Outside reports whether err says a path resolved outside the root.
func Outside(err error) bool { return errors.Is(err, ErrOutside) }

// OpenRegular opens path for reading only if it is a regular file itself: a
// symlink at path is not followed (as git reads .gitignore), and a FIFO or
// device is refused without blocking on it (ErrNotRegular).
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return f, nil
}
