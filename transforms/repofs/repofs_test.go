package repofs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/pallasify/pallasify/transforms/repofs"
)

// tree builds a repository beside a host directory holding a secret: links
// out of the repository (a file, a directory, a chain through an in-tree
// link, ..), links that stay inside (relative and absolute) and a FIFO.
func tree(t *testing.T) (repo string) {
	t.Helper()
	base := t.TempDir()
	repo, host := filepath.Join(base, "repo"), filepath.Join(base, "host")
	for _, d := range []string{repo, host, filepath.Join(repo, "real")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(host, "secret.h"), "HOST_SECRET")
	write(filepath.Join(repo, "real", "a.h"), "inside")
	links := map[string]string{
		"out.h":     filepath.Join(host, "secret.h"),
		"inc":       host,
		"dotdot.h":  "../host/secret.h",
		"hop":       "inc", // in-tree link to a link leading out
		"rel.h":     "real/a.h",
		"abs.h":     filepath.Join(repo, "real", "a.h"),
		"realdir":   "real",
		"dangling":  "nowhere",
		"chain.h":   "hop/secret.h",
		"loop.h":    "loop.h",
		"selfdir":   ".",
		"absinside": repo,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(repo, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(repo, "fifo.h"), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo
}

func TestReadFileStaysInside(t *testing.T) {
	repo := tree(t)
	r, err := repofs.Open(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, rel := range []string{"real/a.h", "rel.h", "abs.h", "realdir/a.h", "selfdir/real/a.h", "absinside/rel.h", "./real/../real/a.h"} {
		b, err := r.ReadFile(rel, 0)
		if err != nil || string(b) != "inside" {
			t.Errorf("ReadFile(%s) = %q, %v; want inside", rel, b, err)
		}
	}
	for _, rel := range []string{"out.h", "inc/secret.h", "dotdot.h", "hop/secret.h", "chain.h", "../host/secret.h",
		"real/../../host/secret.h", filepath.Join(filepath.Dir(repo), "host", "secret.h"), "selfdir/inc/secret.h"} {
		b, err := r.ReadFile(rel, 0)
		if !errors.Is(err, repofs.ErrOutside) {
			t.Errorf("ReadFile(%s) = %q, %v; want ErrOutside", rel, b, err)
		}
	}
	// A FIFO is refused, not opened (an open for reading would wait for a
	// writer forever); a directory is no file either.
	for _, rel := range []string{"fifo.h", "real", "realdir"} {
		if _, err := r.ReadFile(rel, 0); !errors.Is(err, repofs.ErrNotRegular) {
			t.Errorf("ReadFile(%s): %v; want ErrNotRegular", rel, err)
		}
	}
	for _, rel := range []string{"dangling", "loop.h", "missing.h"} {
		if _, err := r.ReadFile(rel, 0); err == nil || errors.Is(err, repofs.ErrOutside) {
			t.Errorf("ReadFile(%s): %v; want a plain error", rel, err)
		}
	}
	if _, err := r.ReadFile("real/a.h", 3); !errors.Is(err, repofs.ErrTooLarge) {
		t.Errorf("ReadFile over the limit: %v", err)
	}
	if _, err := r.Stat("inc"); !errors.Is(err, repofs.ErrOutside) {
		t.Errorf("Stat(inc): %v; want ErrOutside", err)
	}
	if fi, err := r.Stat("realdir"); err != nil || !fi.IsDir() {
		t.Errorf("Stat(realdir) = %v, %v", fi, err)
	}
	if _, err := r.ReadDir("inc"); !errors.Is(err, repofs.ErrOutside) {
		t.Errorf("ReadDir(inc): %v; want ErrOutside", err)
	}
	// The walk lists links as links and never descends through one.
	var walked []string
	if err := r.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		walked = append(walked, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(walked, "inc/secret.h") || !slices.Contains(walked, "inc") || !slices.Contains(walked, "real/a.h") {
		t.Errorf("walked %v", walked)
	}
	walked = nil
	_ = r.WalkDir("realdir", func(p string, d os.DirEntry, err error) error {
		walked = append(walked, p)
		return nil
	})
	if !slices.Equal(walked, []string{"realdir", "realdir/a.h"}) {
		t.Errorf("walked through the in-tree link: %v", walked)
	}
}

// TestRootThroughLink: a root named through a symlink (macOS's /tmp) reads
// as the directory it names.
func TestRootThroughLink(t *testing.T) {
	repo := tree(t)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(repo, alias); err != nil {
		t.Fatal(err)
	}
	if b, err := repofs.ReadFile(alias, "abs.h", 0); err != nil || string(b) != "inside" {
		t.Errorf("ReadFile(alias, abs.h) = %q, %v", b, err)
	}
	if _, err := repofs.ReadFile(alias, "inc/secret.h", 0); !errors.Is(err, repofs.ErrOutside) {
		t.Errorf("ReadFile(alias, inc/secret.h): %v", err)
	}
}
