package deliver_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/deliver"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
)

// e2eRun rebuilds the run of the full kernel pipeline on fixtures/e2e/NAME
// from its golden patch (the validated, wired result), so delivery is tested
// on exactly what migrate produces without re-validating the kernel: new
// files are generated modules, and every changed file carries an applied
// diagnostic of the family the real run gives it.
func e2eRun(t *testing.T, name, dir string) *pipeline.Run {
	t.Helper()
	fixture, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "e2e", name))
	if err != nil {
		t.Fatal(err)
	}
	copyDir(t, fixture, dir)
	applied := t.TempDir()
	copyDir(t, fixture, applied)
	patch, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "e2e", name+".want.patch"))
	if err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, applied, "init", "-q")
	gittest.Git(t, applied, "apply", patch)
	data, _ := os.ReadFile(patch)
	run := &pipeline.Run{Root: dir, Target: "tpu", Version: "test"}
	for _, m := range regexp.MustCompile(`(?m)^\+\+\+ b/(\S+)$`).FindAllStringSubmatch(string(data), -1) {
		p := m[1]
		updated, err := os.ReadFile(filepath.Join(applied, p))
		if err != nil {
			t.Fatal(err)
		}
		f := &pipeline.File{Path: p, Lang: "python", Updated: updated, Mode: 0o644}
		if orig, err := os.ReadFile(filepath.Join(dir, p)); err == nil {
			f.Original = orig
			f.Diagnostics = []pipeline.Diagnostic{{Code: "PDV001", Rule: "cuda-device-string", Applied: true}}
		} else {
			f.Generated = true
		}
		if base := filepath.Base(p); strings.HasPrefix(base, "_pallas_") && base != "_pallas_ops.py" {
			kernel := strings.TrimSuffix(strings.TrimPrefix(base, "_pallas_"), ".py")
			run.Kernels = append(run.Kernels, &pipeline.Kernel{Name: kernel, Draft: &pipeline.Draft{Module: p}})
		}
		run.Files = append(run.Files, f)
	}
	if len(run.Files) < 3 {
		t.Fatalf("golden patch of %s has %d files", name, len(run.Files))
	}
	return run
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeState is what "untouched" means: HEAD's branch, git status, and the
// bytes of every file outside .git.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(gittest.Git(t, dir, "branch", "--show-current") + "\n")
	b.WriteString(gittest.Git(t, dir, "status", "--porcelain", "--untracked-files=all") + "\n")
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() == ".git" {
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			fmt.Fprintf(&b, "%s %x\n", rel, sha256.Sum256(data))
		}
		return nil
	})
	return b.String()
}

// TestBranchLikeACarefulHuman: --branch on the user's own checkout (with
// uncommitted work elsewhere) leaves it on the branch it was on, with the
// index and every file untouched; a re-run changes nothing; and every
// commit on the branch compiles and imports (kernel modules and their
// registrations before the call sites that use them).
func TestBranchLikeACarefulHuman(t *testing.T) {
	for _, name := range []string{"inline_act", "torchlib_act"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			run := e2eRun(t, name, dir)
			gittest.Git(t, dir, "init", "-q", "-b", "main")
			gittest.Git(t, dir, "add", "-A")
			gittest.Git(t, dir, "commit", "-q", "-m", "import")
			// The user's work in progress, in files the run does not touch.
			gittest.WriteTree(t, dir, map[string]string{"NOTES.md": "wip\n", "scratch/try.py": "x = 1\n"})
			gittest.Git(t, dir, "add", "NOTES.md")
			before := treeState(t, dir)

			deliverLocal := func() *deliver.Result {
				src, err := acquire.Open(context.Background(), dir, acquire.Options{})
				if err != nil {
					t.Fatal(err)
				}
				res, err := deliver.Run(context.Background(), src, run, deliver.Options{Version: "9.9.9"})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			res := deliverLocal()
			if res.Status != deliver.StatusCommitted {
				t.Fatalf("first run: %+v", res)
			}
			if after := treeState(t, dir); after != before {
				t.Fatalf("the checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			tip := gittest.Git(t, dir, "rev-parse", branch)

			again := deliverLocal()
			if again.Status != deliver.StatusUpToDate || gittest.Git(t, dir, "rev-parse", branch) != tip {
				t.Fatalf("re-run was not a no-op: %+v", again)
			}
			if len(again.Commits) != len(res.Commits) || again.Commits[0].Hash != res.Commits[0].Hash {
				t.Errorf("re-run reports other commits: %+v", again.Commits)
			}
			if after := treeState(t, dir); after != before {
				t.Fatalf("the re-run changed the checkout")
			}
			checkEveryCommitImports(t, dir, name)
		})
	}
}

// checkEveryCommitImports exports each commit of the branch and checks
// that every Python file compiles, that every generated module a file
// imports is in that commit, and (with the real stack) that importing the
// package fails, if at all, only as the original does — never for a
// missing _pallas module.
func checkEveryCommitImports(t *testing.T, dir, pkg string) {
	t.Helper()
	hashes := strings.Fields(gittest.Git(t, dir, "rev-list", "--reverse", "main.."+branch))
	if len(hashes) < 4 {
		t.Fatalf("%d commits on the branch", len(hashes))
	}
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatal("PALLASIFY_PYTHON unset under PALLASIFY_REQUIRE_STACK=1")
		}
		py = "python3"
	}
	importRE := regexp.MustCompile(`(?m)^\s*(?:from\s+\.\s+import\s+|import\s+)(_pallas_\w+)`)
	var dirs []string
	for i, h := range hashes {
		out := t.TempDir()
		gittest.Git(t, dir, "worktree", "add", "-q", "--detach", out, h)
		t.Cleanup(func() { gittest.GitErr(dir, "worktree", "remove", "--force", out) })
		dirs = append(dirs, out)
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".py") {
				data, _ := os.ReadFile(p)
				for _, m := range importRE.FindAllStringSubmatch(string(data), -1) {
					if _, err := os.Stat(filepath.Join(filepath.Dir(p), m[1]+".py")); err != nil {
						subject := gittest.Git(t, dir, "log", "-1", "--format=%s", h)
						t.Errorf("commit %d (%s): %s imports %s, which is not in the commit", i+1, subject, p, m[1])
					}
				}
			}
			return nil
		})
	}
	// One interpreter checks every commit in order: each file compiles;
	// with the real stack, importing the package fails, if at all, only as
	// the original does (it builds its CUDA extension at import, which fails
	// without CUDA) — never for a missing _pallas module.
	script := `import os, sys, py_compile, tempfile, importlib
pkg, real, dirs = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
bad = 0
for i, d in enumerate(dirs, 1):
    for root, _, files in os.walk(d):
        for f in files:
            if f.endswith(".py"):
                try:
                    py_compile.compile(os.path.join(root, f), cfile=os.path.join(tempfile.gettempdir(), "pc.pyc"), doraise=True)
                except py_compile.PyCompileError as e:
                    print(f"commit {i}: {e}"); bad = 1
    if not real:
        continue
    sys.path.insert(0, d)
    try:
        importlib.import_module(pkg)
    except ImportError as e:
        if "_pallas" in str(e):
            print(f"commit {i}: import {pkg}: {e}"); bad = 1
    except Exception:
        pass
    sys.path.remove(d)
    for m in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[m]
sys.exit(bad)
`
	real := "0"
	if os.Getenv("PALLASIFY_PYTHON") != "" {
		real = "1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-c", script, pkg, real}, dirs...)...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "CUDA_VISIBLE_DEVICES=", "JAX_PLATFORMS=cpu")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("commits do not compile and import: %v\n%s", err, b)
	}
}

// A file the run rewrites that has uncommitted changes is refused (its
// rewrite would carry the user's work into pallasify's commit), and so is
// a local pallasify branch someone committed to.
func TestRefusesDirtyFilesAndForeignLocalBranch(t *testing.T) {
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	gittest.WriteTree(t, dir, gittest.Sources(7))
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "init")
	ctx := context.Background()
	open := func() *acquire.Source {
		src, err := acquire.Open(ctx, dir, acquire.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return src
	}

	gittest.WriteTree(t, dir, map[string]string{"train.py": "import torch\nx = torch.zeros(1).cuda()  # wip\n"})
	run, _ := gittest.Migrate(ctx, dir)
	_, err := deliver.Run(ctx, open(), run, deliver.Options{})
	if err == nil || !strings.Contains(err.Error(), "train.py") || !strings.Contains(err.Error(), "commit or stash") {
		t.Fatalf("dirty file: %v", err)
	}
	if _, err := gittest.GitErr(dir, "rev-parse", "--verify", branch); err == nil {
		t.Fatal("a branch was created from a dirty file")
	}
	gittest.Git(t, dir, "checkout", "-q", "--", "train.py")

	run, _ = gittest.Migrate(ctx, dir)
	if _, err := deliver.Run(ctx, open(), run, deliver.Options{}); err != nil {
		t.Fatal(err)
	}
	// Someone works on the pallasify branch locally.
	gittest.Git(t, dir, "checkout", "-q", branch)
	gittest.WriteTree(t, dir, map[string]string{"mine.py": "y = 2\n"})
	gittest.Git(t, dir, "add", "mine.py")
	gittest.Git(t, dir, "commit", "-q", "-m", "my own fix")
	gittest.Git(t, dir, "checkout", "-q", "main")
	tip := gittest.Git(t, dir, "rev-parse", branch)
	gittest.WriteTree(t, dir, map[string]string{"more.py": "import torch\nz = torch.ones(1).cuda()\n"})
	gittest.Git(t, dir, "add", "more.py")
	gittest.Git(t, dir, "commit", "-q", "-m", "more")
	run, _ = gittest.Migrate(ctx, dir)
	_, err = deliver.Run(ctx, open(), run, deliver.Options{})
	if !errors.Is(err, deliver.ErrForeignCommits) {
		t.Fatalf("foreign local commit: %v", err)
	}
	if gittest.Git(t, dir, "rev-parse", branch) != tip {
		t.Fatal("the branch with someone's commit was moved")
	}
}
