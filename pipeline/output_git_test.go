package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// gitRepo makes a git work tree of files, commits the ones in track (with
// -f, so .gitignore does not stop them) and leaves the rest untracked.
func gitRepo(t *testing.T, files map[string]string, track []string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := writeTree(t, files)
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitRun("init", "-q")
	gitRun(append([]string{"add", "-f", "--"}, track...)...)
	gitRun("commit", "-q", "-m", "init")
	return root
}

// TestOutKeepsTrackedIgnoredFiles: a file git tracks is part of the project
// even when .gitignore matches it (git's index decides); an untracked
// ignored file is kept by --out as a plain copy would; --write, --out and
// --patch change the same files.
func TestOutKeepsTrackedIgnoredFiles(t *testing.T) {
	files := map[string]string{
		".gitignore":         "data/\n*.log\ngen_*.py\n",
		"train.py":           "d = \"cuda\"\n",
		"data/input.txt":     "tokens\n",
		"data/cache.bin":     "untracked, ignored\n",
		"run.log":            "untracked log\n",
		"gen_device.py":      "d = \"cuda\"\n",
		"gen_untracked.py":   "d = \"cuda\"\n",
		"vendor/lib/keep.py": "x = \"cuda\"\n",
		".venv/pyvenv.cfg":   "home = /usr\n",
		"__pycache__/a.pyc":  "cache",
	}
	root := gitRepo(t, files, []string{".gitignore", "train.py", "data/input.txt", "gen_device.py", "vendor/lib/keep.py"})
	ctx := context.Background()
	run, err := Migrate(ctx, Options{Root: root, Rules: testRules})
	if err != nil {
		t.Fatal(err)
	}
	var walked []string
	for _, f := range run.Files {
		walked = append(walked, f.Path)
	}
	for _, p := range []string{"data/input.txt", "gen_device.py", "train.py"} {
		if !hasPath(walked, p) {
			t.Errorf("tracked %s not walked (walked %v)", p, walked)
		}
	}
	for _, p := range []string{"data/cache.bin", "run.log", "gen_untracked.py"} {
		if hasPath(walked, p) {
			t.Errorf("untracked ignored %s walked", p)
		}
	}

	out := filepath.Join(t.TempDir(), "out")
	if err := WriteTree(ctx, run, out); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, out)
	want := map[string]string{
		".gitignore": files[".gitignore"], "train.py": "d = \"tpu\"\n", "data/input.txt": "tokens\n",
		"data/cache.bin": files["data/cache.bin"], "run.log": files["run.log"], "gen_device.py": "d = \"tpu\"\n",
		"gen_untracked.py": files["gen_untracked.py"], "vendor/lib/keep.py": files["vendor/lib/keep.py"],
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("--out tree:\n got %v\nwant %v", got, want)
	}

	outChanged := changedAgainst(t, root, out)
	var patched []string
	for _, line := range strings.Split(string(run.Patch()), "\n") {
		if p, ok := strings.CutPrefix(line, "diff --git a/"); ok {
			patched = append(patched, strings.SplitN(p, " b/", 2)[0])
		}
	}
	written, err := WriteInPlace(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(written)
	sort.Strings(patched)
	if !reflect.DeepEqual(written, patched) || !reflect.DeepEqual(outChanged, patched) {
		t.Errorf("changed files disagree: --write %v, --out %v, --patch %v", written, outChanged, patched)
	}
	if len(patched) != 2 {
		t.Errorf("changed %v; want train.py and gen_device.py", patched)
	}
}

// changedAgainst lists the files of out whose contents differ from the same
// path under root (the root read before any in-place write).
func changedAgainst(t *testing.T, root, out string) []string {
	t.Helper()
	var changed []string
	for rel, c := range snapshot(t, out) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil || string(b) != c {
			changed = append(changed, rel)
		}
	}
	sort.Strings(changed)
	return changed
}

func hasPath(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
