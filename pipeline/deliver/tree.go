package deliver

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeBuilder makes commits straight in the object store: blobs, trees and
// commits are written there and only the delivery branch's ref moves, so the
// user's HEAD, index and working tree are never touched.
type treeBuilder struct {
	s storer.EncodedObjectStorer
	// base is the tree the changes apply to.
	base *object.Tree
	// files are every change so far, by slash path: each commit's tree is
	// the base tree plus all changes up to and including its group.
	files map[string]treeFile
}

type treeFile struct {
	blob plumbing.Hash
	mode filemode.FileMode
}

// put records the new content of path (a blob is written now).
func (b *treeBuilder) put(p string, data []byte, mode fs.FileMode) error {
	h, err := b.writeBlob(data)
	if err != nil {
		return err
	}
	fm := filemode.Regular
	if mode&0o111 != 0 {
		fm = filemode.Executable
	}
	if b.files == nil {
		b.files = map[string]treeFile{}
	}
	b.files[p] = treeFile{blob: h, mode: fm}
	return nil
}

func (b *treeBuilder) writeBlob(data []byte) (plumbing.Hash, error) {
	obj := b.s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return b.s.SetEncodedObject(obj)
}

// tree writes the base tree with every change so far and returns its hash.
func (b *treeBuilder) tree() (plumbing.Hash, error) {
	return b.writeDir(b.base, "", b.files)
}

// writeDir writes directory dir (the tree t, nil when new) with the changes
// under it.
func (b *treeBuilder) writeDir(t *object.Tree, dir string, changes map[string]treeFile) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if t != nil {
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	sub := map[string]map[string]treeFile{}
	for p, f := range changes {
		rel := p
		if dir != "" {
			if !strings.HasPrefix(p, dir+"/") {
				continue
			}
			rel = strings.TrimPrefix(p, dir+"/")
		}
		name, rest, nested := strings.Cut(rel, "/")
		if !nested {
			entries[name] = object.TreeEntry{Name: name, Mode: f.mode, Hash: f.blob}
			continue
		}
		if sub[name] == nil {
			sub[name] = map[string]treeFile{}
		}
		sub[name][path.Join(dir, name, rest)] = f
	}
	for name, ch := range sub {
		var st *object.Tree
		if e, ok := entries[name]; ok {
			if e.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is a file in the base, not a directory", path.Join(dir, name))
			}
			var err error
			if st, err = object.GetTree(b.s, e.Hash); err != nil {
				return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", path.Join(dir, name), err)
			}
		}
		h, err := b.writeDir(st, path.Join(dir, name), ch)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
	}
	out := &object.Tree{}
	for _, e := range entries {
		out.Entries = append(out.Entries, e)
	}
	// Git orders entries by name, a directory's name as if it ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(out.Entries, func(i, j int) bool { return key(out.Entries[i]) < key(out.Entries[j]) })
	obj := b.s.NewEncodedObject()
	if err := out.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return b.s.SetEncodedObject(obj)
}

// commit writes a commit object.
func (b *treeBuilder) commit(c *object.Commit) (plumbing.Hash, error) {
	obj := b.s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return b.s.SetEncodedObject(obj)
}
