package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTreeNeverWritesThroughLinks: a tree write whose parent directory is a
// symlink (pointing out of the tree or into it) or whose target is a link,
// FIFO or directory is refused, and nothing outside the tree changes.
func TestTreeNeverWritesThroughLinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "x.py"), []byte("keep\n"), 0o644)
	os.Symlink(outside, filepath.Join(root, "out"))
	os.Mkdir(filepath.Join(root, "real"), 0o755)
	os.Symlink("real", filepath.Join(root, "in"))
	os.Symlink(filepath.Join(outside, "x.py"), filepath.Join(root, "link.py"))
	syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)
	tree, err := OpenTree(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for rel, want := range map[string]error{
		"out/x.py":     ErrSymlinkParent,
		"out/new/y.py": ErrSymlinkParent,
		"in/z.py":      ErrSymlinkParent,
		"link.py":      ErrNotRegular,
		"fifo":         ErrNotRegular,
		"real":         ErrNotRegular,
		"../escape.py": nil,
	} {
		err := tree.WriteBytes(rel, []byte("new\n"), 0o644)
		if err == nil || (want != nil && !errors.Is(err, want)) {
			t.Errorf("write %s: %v; want %v", rel, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "x.py")); string(b) != "keep\n" {
		t.Errorf("outside file = %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside holds %d entries", len(ents))
	}
	if fi, _ := os.Lstat(filepath.Join(root, "link.py")); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	// Ordinary writes work, new parents included, and leave no temp file.
	if err := tree.WriteBytes("a/b/c.py", []byte("ok\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(root, "a/b/c.py")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("a/b/c.py: %v %v", fi, err)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "a/b"))
	for _, e := range ents {
		if strings.Contains(e.Name(), TempPrefix) {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
}
