package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sandbox's /tmp is private: files of other jobs there are invisible,
// while the interpreter's virtual environment and listed paths stay readable.
func TestPrivateTmpExposesOnlyWhatIsNeeded(t *testing.T) {
	sb := &Sandbox{}
	if err := sb.Check(context.Background()); err != nil {
		t.Skipf("bubblewrap unusable here: %v", err)
	}
	base, err := os.MkdirTemp("/tmp", "sbtest")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	venv := filepath.Join(base, "venv")
	must(t, os.MkdirAll(filepath.Join(venv, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(venv, "bin", "tool"), []byte("#!/bin/sh\necho tool-ran; cat \"$1\" 2>&1; cat \"$2\" 2>&1; echo x > \"$3\" 2>&1 || echo write-refused\n"), 0o755))
	shared := filepath.Join(base, "shared.txt")
	secret := filepath.Join(base, "secret.txt")
	must(t, os.WriteFile(shared, []byte("shared-visible\n"), 0o644))
	must(t, os.WriteFile(secret, []byte("secret-visible\n"), 0o644))
	work := filepath.Join(base, "work")
	must(t, os.Mkdir(work, 0o755))

	sb.ReadOnly = []string{shared}
	out, err := sb.Run(context.Background(), work, Limits{}, filepath.Join(venv, "bin", "tool"), shared, secret, filepath.Join(venv, "x"))
	got := string(out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, got)
	}
	for _, want := range []string{"tool-ran", "shared-visible", "write-refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "secret-visible") {
		t.Errorf("a file of /tmp that was not exposed was readable:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(venv, "x")); err == nil {
		t.Errorf("the exposed environment was writable")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A bubblewrap without --size (before 0.8.0) gets /tmp and /dev/shm as host
// directories that the watchdog measures: a run that fills one is stopped
// with SBX-DISK, and the directories are gone afterwards.
func TestUnsizedScratchIsPolled(t *testing.T) {
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("no bwrap")
	}
	old := filepath.Join(t.TempDir(), "bwrap-0.7")
	must(t, os.WriteFile(old, []byte("#!/bin/sh\nif [ \"$1\" = --help ]; then "+real+" --help | grep -v -- --size; exit 0; fi\nexec "+real+" \"$@\"\n"), 0o755))
	sb := &Sandbox{Bwrap: old}
	if err := sb.Check(context.Background()); err != nil {
		t.Skipf("bubblewrap unusable here: %v", err)
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "pallasify-sbx-scratch-*"))
	out, err := sb.Run(context.Background(), t.TempDir(), Limits{Wall: time.Minute, TmpMB: 8, DiskMB: 256},
		"/bin/sh", "-c", "mount | grep -c ' /tmp ' ; head -c 12000000 /dev/zero > /dev/shm/x; sleep 20")
	if err == nil || !strings.Contains(err.Error(), ViolationDisk) || !strings.Contains(err.Error(), "/dev/shm") {
		t.Fatalf("12 MB into an unsized 8 MiB /dev/shm: %v\n%s", err, out)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "pallasify-sbx-scratch-*"))
	if len(after) > len(before) {
		t.Errorf("scratch directories left behind: %v", after)
	}
}

// A venv layered on another through a .pth line (the corpus benchmark venv
// on the project's) sees what that line adds to its sys.path: the
// directory is exposed read-only with the venv; a line that runs code is
// not a path, and a directory no .pth names stays hidden.
func TestPthDirectoriesAreExposed(t *testing.T) {
	sb := &Sandbox{}
	if err := sb.Check(context.Background()); err != nil {
		t.Skipf("bubblewrap unusable here: %v", err)
	}
	base, err := os.MkdirTemp("/tmp", "sbpth")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	venv, layered, other := filepath.Join(base, "venv"), filepath.Join(base, "base-site"), filepath.Join(base, "other")
	site := filepath.Join(venv, "lib", "python3.11", "site-packages")
	must(t, os.MkdirAll(filepath.Join(venv, "bin"), 0o755))
	must(t, os.MkdirAll(site, 0o755))
	must(t, os.MkdirAll(layered, 0o755))
	must(t, os.MkdirAll(other, 0o755))
	must(t, os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(site, "base.pth"), []byte(layered+"\nimport os; "+other+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(layered, "mod.txt"), []byte("layered-visible\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(other, "mod.txt"), []byte("other-visible\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(venv, "bin", "tool"), []byte("#!/bin/sh\ncat \"$1\" 2>&1; cat \"$2\" 2>&1; true\n"), 0o755))
	work := filepath.Join(base, "work")
	must(t, os.Mkdir(work, 0o755))
	out, err := sb.Run(context.Background(), work, Limits{}, filepath.Join(venv, "bin", "tool"),
		filepath.Join(layered, "mod.txt"), filepath.Join(other, "mod.txt"))
	got := string(out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, got)
	}
	if !strings.Contains(got, "layered-visible") {
		t.Errorf("the directory the venv's .pth adds is not readable:\n%s", got)
	}
	if strings.Contains(got, "other-visible") {
		t.Errorf("a directory named only after an import line was exposed:\n%s", got)
	}
}
