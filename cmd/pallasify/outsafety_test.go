package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
)

// treeDigest lists every path under root (the .git directory included) with
// its size, so a test can tell that a run left a tree exactly as it was.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		info, _ := d.Info()
		if info != nil {
			b.WriteString(rel + " " + info.Mode().String())
			if info.Mode().IsRegular() {
				b.WriteString(" " + string(rune('0'+info.Size()%10)))
			}
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// TestOutIsTheTreeLosesNothing reproduces issue 32's first attack:
// `pallasify migrate --out . .` in a git repository printed "the output
// directory is the tree itself" and then deleted the repository, .git
// included, in its cleanup. Every refusal of --out must leave the named
// directory as it was: the tree itself, the tree through a symlink, a
// parent of the tree, a non-empty directory.
func TestOutIsTheTreeLosesNothing(t *testing.T) {
	root := writeProject(t)
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	before := treeDigest(t, root)
	for name, out := range map[string]string{
		"the tree":         root,
		"the tree, dot":    ".",
		"through symlink":  link,
		"the tree's .git":  filepath.Join(root, ".git"),
		"parent of a tree": filepath.Dir(root),
		"a subdirectory":   filepath.Join(root, "lib"),
	} {
		t.Run(name, func(t *testing.T) {
			o, _ := newMigrate(t, root)
			o.Out = out
			if out == "." {
				t.Chdir(root)
				o.Path = "."
			}
			err := migrateRun(context.Background(), o)
			if code := exitCode(err); code != 2 {
				t.Errorf("--out %s: exit %d (%v); want 2", out, code, err)
			}
			if after := treeDigest(t, root); after != before {
				t.Fatalf("--out %s changed the tree:\nbefore:\n%s\nafter:\n%s", out, before, after)
			}
		})
	}
}

// TestOutFailureKeepsWhatWasThere: a failing --out into an existing empty
// directory leaves that directory (and only it) as it was, and nothing
// beside it.
func TestOutFailureKeepsWhatWasThere(t *testing.T) {
	root := writeProject(t)
	// A file the run cannot read makes WriteTree fail half-way through.
	secret := filepath.Join(root, "lib", "zz_unreadable.txt")
	if err := os.WriteFile(secret, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dst := filepath.Join(parent, "out")
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	o, _ := newMigrate(t, root)
	o.Out = dst
	// Cancel the run as the output is being written: the cancelled write must
	// leave dst empty and no partial tree beside it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := writeTreeForTest(ctx, o)
	if err == nil {
		t.Fatal("a cancelled --out succeeded")
	}
	ents, _ := os.ReadDir(dst)
	if len(ents) != 0 {
		t.Errorf("--out dir holds %d entries after a failed run", len(ents))
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("--out dir after a failed run: %v %v", fi, err)
	}
	side, _ := os.ReadDir(parent)
	if len(side) != 1 {
		t.Errorf("left beside the --out dir: %v", side)
	}
}

// writeTreeForTest runs the pipeline once and then writeTree with ctx.
func writeTreeForTest(ctx context.Context, o *migrateOptions) error {
	popts, _, err := o.options(false)
	if err != nil {
		return err
	}
	run, err := runPipeline(context.Background(), o.IO, popts, pipeline.Migrate)
	if err != nil {
		return err
	}
	return writeTree(ctx, run, o.Out)
}

// TestOutKilledThenRerun: a `migrate --out` killed with SIGKILL half-way
// leaves no partial tree at the destination (the copy is built beside it
// and renamed into place), and the next run into the same destination
// succeeds and removes what the killed run left.
func TestOutKilledThenRerun(t *testing.T) {
	bin := buildBinary(t)
	root := writeProject(t)
	// Enough files that the copy takes a while.
	big := strings.Repeat("x = 1\n", 2000)
	for i := range 3000 {
		p := filepath.Join(root, "pkg", fmt.Sprintf("m%04d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parent := t.TempDir()
	dst := filepath.Join(parent, "out")
	killed := false
	for try := 0; try < 20 && !killed; try++ {
		cmd := exec.Command(bin, "migrate", "--out", dst, root)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the copy has begun, then kill it.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if ents, _ := os.ReadDir(parent); len(ents) > 0 {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(try) * 5 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
			killed = true
		} else {
			os.RemoveAll(dst) // finished before the kill: try again, later
		}
	}
	if !killed {
		t.Skip("the run always finished before SIGKILL reached it")
	}
	if ents, err := os.ReadDir(dst); err == nil && len(ents) > 0 {
		t.Errorf("a killed --out left a partial tree of %d entries at the destination", len(ents))
	}
	out, err := exec.Command(bin, "migrate", "--out", dst, root).CombinedOutput()
	if err != nil {
		t.Fatalf("rerun after a killed --out: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "train.py")); err != nil || !strings.Contains(string(b), "tpu") {
		t.Errorf("rerun's out/train.py = %q (%v)", b, err)
	}
	if n := countFiles(t, dst); n != countFiles(t, root) {
		t.Errorf("rerun's out holds %d files; the tree %d", n, countFiles(t, root))
	}
	if side, _ := os.ReadDir(parent); len(side) != 1 {
		t.Errorf("left beside the --out dir after the rerun: %v", side)
	}
}

func countFiles(t *testing.T, root string) int {
	n := 0
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// buildBinary builds bin/pallasify into a temp dir once per test.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pallasify")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestPatchNeverReplacesSpecialFiles reproduces issue 32's second attack:
// `--patch /dev/null` renamed a regular file over the device node (as root
// that breaks the machine), and `--patch link` replaced the symlink. A
// --patch that names anything but a regular file (or nothing) is refused
// and the thing it names is left as it was; `--patch -` writes to stdout.
func TestPatchNeverReplacesSpecialFiles(t *testing.T) {
	root := writeProject(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.patch")
	os.WriteFile(target, []byte("keep\n"), 0o644)
	link := filepath.Join(dir, "link.patch")
	os.Symlink(target, link)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	// A device node of our own (as root), so the test never touches /dev/null.
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
		dev = "/dev/null" // not root: the real /dev/null, which a non-root rename cannot replace anyway
	}
	for name, p := range map[string]string{"device": dev, "fifo": fifo, "symlink": link, "directory": sub} {
		t.Run(name, func(t *testing.T) {
			before, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			o, _ := newMigrate(t, root)
			o.Patch = p
			done := make(chan error, 1)
			go func() { done <- migrateRun(context.Background(), o) }()
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("--patch on a " + name + " hung")
			}
			if code := exitCode(err); code != 2 {
				t.Errorf("--patch %s: exit %d (%v); want 2", name, code, err)
			}
			after, err := os.Lstat(p)
			if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("--patch replaced the %s: before %v, after %v (%v)", name, before.Mode(), after, err)
			}
			if b, _ := os.ReadFile(target); string(b) != "keep\n" {
				t.Errorf("--patch wrote through the %s: target = %q", name, b)
			}
		})
	}
	t.Run("stdout", func(t *testing.T) {
		o, out := newMigrate(t, root)
		o.Patch = "-"
		if err := migrateRun(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "diff --git a/run.py b/run.py\n") {
			t.Errorf("--patch - printed %q", out.String())
		}
		if _, err := os.Stat(filepath.Join(root, "-")); err == nil {
			t.Error("--patch - wrote a file named -")
		}
	})
}
