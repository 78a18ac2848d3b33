package pipeline

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
)

var update = flag.Bool("update", false, "rewrite fixtures/projects/*/want.<target>.patch")

// fixtureExclude keeps the golden patches out of the migrated tree.
var fixtureExclude = []string{"want.*.patch"}

// TestFixtures runs every project under fixtures/projects for both targets
// with the full rule set and checks, per project and target:
//   - the patch equals want.<target>.patch (-update rewrites it);
//   - `git apply --check` takes the patch on a copy of the original tree;
//   - a second pass over the migrated tree changes nothing and reports
//     nothing the first did not (SecondPassNews);
//   - files left untouched carry the diagnostic that says why;
//   - every rewritten .py, and every code cell of a rewritten notebook,
//     compiles (one batched py_compile at the end).
func TestFixtures(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "fixtures", "projects", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var projects []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			projects = append(projects, d)
		}
	}
	if len(projects) == 0 {
		t.Fatal("no fixture projects under fixtures/projects")
	}
	var compile []string // rewritten .py files in migrated copies
	keep := t.TempDir()  // outlives the subtests, for the batched py_compile
	for _, dir := range projects {
		for _, target := range rule.Targets {
			name := filepath.Base(dir) + "/" + string(target)
			out := filepath.Join(keep, filepath.Base(dir)+"."+string(target))
			t.Run(name, func(t *testing.T) {
				compile = append(compile, checkFixture(t, dir, target, out)...)
			})
		}
	}
	if len(compile) > 0 {
		pyCompile(t, compile)
	}
}

func checkFixture(t *testing.T, dir string, target rule.Target, out string) []string {
	ctx := context.Background()
	opts := Options{Root: dir, Target: target, Exclude: fixtureExclude}
	run, err := Migrate(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	patch := run.Patch()
	wantFile := filepath.Join(dir, "want."+string(target)+".patch")
	if *update {
		if err := os.WriteFile(wantFile, patch, 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		want, err := os.ReadFile(wantFile)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if !bytes.Equal(patch, want) {
			t.Errorf("patch differs from %s (go test ./pipeline -run Fixtures -update):\n--- got\n%s\n--- want\n%s", wantFile, patch, want)
		}
	}
	for _, f := range run.Files {
		if f.Skipped == "" {
			continue
		}
		if f.Changed() {
			t.Errorf("%s: skipped (%s) but changed", f.Path, f.Skipped)
		}
		found := false
		for _, d := range f.Diagnostics {
			found = found || d.Code == f.Skipped
		}
		if !found {
			t.Errorf("%s: skipped as %s without that diagnostic", f.Path, f.Skipped)
		}
	}
	if len(patch) > 0 {
		orig := filepath.Join(t.TempDir(), "orig")
		copyTree(t, dir, orig)
		gitApplyCheck(t, orig, patch)
	}
	if err := WriteTree(ctx, run, out); err != nil {
		t.Fatal(err)
	}
	opts.Root = out
	run2, err := Migrate(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range SecondPassNews(run, run2) {
		t.Errorf("second pass: %s", n)
	}
	var changed, notebooks []string
	for _, f := range run.Files {
		switch {
		case f.Changed() && f.Lang == LangPython:
			changed = append(changed, filepath.Join(out, filepath.FromSlash(f.Path)))
		case f.Changed() && f.Lang == LangNotebook:
			notebooks = append(notebooks, filepath.Join(out, filepath.FromSlash(f.Path)))
		}
	}
	return append(changed, notebookCells(t, out+".cells", notebooks)...)
}

// copyTree copies src to dst as it is on disk: symlinks stay links and are
// never followed.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, _ := d.Info()
			return os.WriteFile(target, b, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// python returns the interpreter tests use: $PALLASIFY_PYTHON, the repo's
// .venv, then python3 on PATH.
func python(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if abs, err := filepath.Abs(filepath.Join("..", ".venv", "bin", "python")); err == nil {
		if _, err := os.Stat(abs); err == nil {
			return abs
		}
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p
	}
	t.Skip("no Python interpreter (PALLASIFY_PYTHON, .venv or python3)")
	return ""
}

// pyCompile byte-compiles every file in one interpreter call.
func pyCompile(t *testing.T, files []string) {
	t.Helper()
	cmd := exec.Command(python(t), append([]string{"-m", "py_compile"}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("py_compile of %d rewritten files failed: %v\n%s", len(files), err, strings.TrimSpace(string(out)))
	}
}
