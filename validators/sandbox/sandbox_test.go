package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
