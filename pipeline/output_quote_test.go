package pipeline

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// quoteNames are file names git quotes in a patch (a tab, a newline, a
// double quote, a backslash, an escape, DEL, bytes that are not UTF-8, a
// UTF-8 é) and two it does not (a space, plain ASCII).
var quoteNames = []string{
	"tab\there.py", "new\nline.py", `quo"te.py`, `back\slash.py`, "esc\x1b[31mred.py", "del\x7f.py",
	"latin\xe9.py", "caf\u00e9.py", "sp ace.py", "plain.py", "cr\rret.py", "bell\a.py",
}

// TestPatchQuotesPathsAsGit reproduces issue 32's seventh attack: a file
// named with a tab gave `diff --git a/"tab\there.py"`, where git writes
// `"a/tab\there.py"`, and `git apply` refused the patch. Every header line
// of our patch must equal git's own for the same change, byte for byte,
// and `git apply` must take the whole patch.
func TestPatchQuotesPathsAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	git := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "core.quotePath=true"}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return out
	}
	git("init", "-q")
	run := &Run{Root: root}
	for _, n := range quoteNames {
		if err := os.WriteFile(filepath.Join(root, n), []byte("x = 'cuda'\n"), 0o644); err != nil {
			t.Fatalf("%q: %v", n, err)
		}
		run.Files = append(run.Files, &File{Path: n, Mode: 0o644, Original: []byte("x = 'cuda'\n"), Updated: []byte("x = 'tpu'\n")})
	}
	git("add", "-A")
	git("commit", "-q", "-m", "init")
	patch := run.Patch()
	// git's own diff of the same change.
	for _, n := range quoteNames {
		os.WriteFile(filepath.Join(root, n), []byte("x = 'tpu'\n"), 0o644)
	}
	want := git("diff", "--no-color", "--no-ext-diff")
	headers := func(b []byte) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
				m[l] = true
			}
		}
		return m
	}
	got, wantH := headers(patch), headers(want)
	for l := range wantH {
		if !got[l] {
			t.Errorf("git writes %q; our patch lacks it", l)
		}
	}
	for l := range got {
		if !wantH[l] {
			t.Errorf("our patch writes %q; git does not", l)
		}
	}
	git("checkout", "-q", "--", ".")
	pf := filepath.Join(t.TempDir(), "p.patch")
	os.WriteFile(pf, patch, 0o644)
	git("apply", pf)
	for _, n := range quoteNames {
		if b, _ := os.ReadFile(filepath.Join(root, n)); string(b) != "x = 'tpu'\n" {
			t.Errorf("git apply left %q as %q", n, b)
		}
	}
	// A generated (new) file with such a name: git apply creates it.
	gen := &Run{Root: root, Files: []*File{{Path: "gen\tnew.py", Mode: 0o644, Generated: true, Updated: []byte("y = 1\n")}}}
	os.WriteFile(pf, gen.Patch(), 0o644)
	if !bytes.Contains(gen.Patch(), []byte("+++ \"b/gen\\tnew.py\"\n")) {
		t.Errorf("new file header: %q", gen.Patch())
	}
	git("apply", pf)
	if b, err := os.ReadFile(filepath.Join(root, "gen\tnew.py")); err != nil || string(b) != "y = 1\n" {
		t.Errorf("git apply of a new quoted file: %q %v", b, err)
	}
}
