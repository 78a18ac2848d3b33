// Package safefs is the one way pallasify writes a file: whole or not at all
// (a temporary file beside the target, synced, then renamed over it), and
// only as a regular file — never through or over a device, FIFO, socket,
// symlink or directory that it did not create.
//
// Two entry points: WriteFile for a path a user named (--patch, a run
// directory's report, a cache entry), and Tree for the files of a tree
// (--write, --out), where every write also stays inside the tree's root and
// no parent directory may be a symlink.
//
// It sits in transforms/ because that is the lowest layer: every stage may
// import it.
package safefs

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pallasify/pallasify/transforms/repofs"
)

// ErrNotRegular is the error of a write whose target exists and is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file (pallasify writes only regular files; never a device, FIFO, socket, symlink or directory)")

// ErrSymlinkParent is the error of a tree write whose parent directory is a
// symlink (or not a directory).
var ErrSymlinkParent = errors.New("a parent directory is a symlink or not a directory")

// TempPrefix marks the temporary files a write makes beside its target
// ("." + base + TempPrefix + random); what a killed run leaves carries it.
const TempPrefix = ".pallasify-"

// WriteFile writes what fill writes to path (absolute, or relative to the
// working directory), atomically, with mode's permission bits. path must
// not exist or be a regular file; its directory must exist. A symlink in
// path's directory part (a link the user chose, such as /tmp on macOS) is
// followed; path itself is never followed, nor replaced when it is a link.
func WriteFile(path string, mode fs.FileMode, fill func(io.Writer) error) error {
	dir, base := filepath.Split(path)
	if base == "" || base == "." || base == ".." {
		return &fs.PathError{Op: "write", Path: path, Err: ErrNotRegular}
	}
	if dir == "" {
		dir = "."
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer root.Close()
	if err := writeIn(root, base, mode, fill); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteBytes is WriteFile for data in hand.
func WriteBytes(path string, data []byte, mode fs.FileMode) error {
	return WriteFile(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Tree writes files under one directory and nowhere else.
type Tree struct {
	root *os.Root
	dir  string
}

// OpenTree opens dir, which must exist and be a directory, for writing.
func OpenTree(dir string) (*Tree, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Tree{root: root, dir: dir}, nil
}

// Close releases the tree's directory handle.
func (t *Tree) Close() error { return t.root.Close() }

// Dir is the directory the tree was opened at.
func (t *Tree) Dir() string { return t.dir }

// WriteFile writes rel (slash-separated, relative to the tree) atomically.
// Missing parent directories are made (0755); an existing parent that is a
// symlink or not a directory refuses the write, as does a rel that exists
// and is not a regular file.
func (t *Tree) WriteFile(rel string, mode fs.FileMode, fill func(io.Writer) error) error {
	name, err := t.parents(rel)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := writeIn(t.root, name, mode, fill); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// WriteBytes is WriteFile for data in hand.
func (t *Tree) WriteBytes(rel string, data []byte, mode fs.FileMode) error {
	return t.WriteFile(rel, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Symlink makes rel a symlink to target (nothing may exist at rel), its
// parents made as WriteFile makes them. The link's target is not checked:
// the caller decides which links a tree may hold.
func (t *Tree) Symlink(target, rel string) error {
	name, err := t.parents(rel)
	if err != nil {
		return fmt.Errorf("link %s: %w", rel, err)
	}
	if err := t.root.Symlink(target, name); err != nil {
		return fmt.Errorf("link %s: %w", rel, err)
	}
	return nil
}

// CopyFrom copies the regular file src (read through repofs.OpenRegular:
// never through a link, never blocking on a FIFO) to rel with mode's
// permission bits.
func (t *Tree) CopyFrom(src, rel string, mode fs.FileMode) error {
	in, err := repofs.OpenRegular(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return t.WriteFile(rel, mode, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// parents checks rel's parent directories inside the tree — each one that
// exists must be a real directory, not a symlink — makes the missing ones,
// and returns rel in the platform's form.
func (t *Tree) parents(rel string) (string, error) {
	name := filepath.FromSlash(rel)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("%q is not a path inside %s", rel, t.dir)
	}
	dir := filepath.Dir(name)
	if dir == "." {
		return name, nil
	}
	parts := strings.Split(dir, string(filepath.Separator))
	for i := range parts {
		p := filepath.Join(parts[:i+1]...)
		fi, err := t.root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err := t.root.MkdirAll(dir, 0o755); err != nil {
				return "", err
			}
			break
		}
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s: %w", filepath.ToSlash(p), ErrSymlinkParent)
		}
	}
	return name, nil
}

// writeIn is the one atomic write: name (inside root) must not exist or be
// a regular file; a new temporary file beside it takes the bytes, is synced
// and renamed over it.
func writeIn(root *os.Root, name string, mode fs.FileMode, fill func(io.Writer) error) error {
	if fi, err := root.Lstat(name); err == nil {
		if !fi.Mode().IsRegular() {
			return ErrNotRegular
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+TempPrefix+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		f.Close()
		root.Remove(tmp)
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := fill(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if mode.Perm() == 0 {
		mode = 0o644
	}
	if err := f.Chmod(mode.Perm()); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		root.Remove(tmp)
		return err
	}
	// A link or device swapped in since the check above is replaced by the
	// rename, never written through.
	if err := root.Rename(tmp, name); err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}
