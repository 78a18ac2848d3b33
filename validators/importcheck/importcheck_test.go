package importcheck_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/validators/importcheck"
)

// python is the venv's Python (PALLASIFY_PYTHON) with torch, torch-tpu and pytest, or the test
// skips (fails under PALLASIFY_REQUIRE_STACK=1).
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" || exec.Command(py, "-c", "import importlib.metadata as m; m.version('torch-tpu'); m.version('pytest')").Run() != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatal("no python with torch, torch-tpu and pytest (PALLASIFY_REQUIRE_STACK=1)")
		}
		t.Skip("no python with torch, torch-tpu and pytest (set PALLASIFY_PYTHON)")
	}
	return py
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"pkg/__init__.py":        "",
		"pkg/a.py":               "",
		"pkg/sub/__init__.py":    "",
		"pkg/sub/b.py":           "",
		"src/lib/__init__.py":    "",
		"src/lib/c.py":           "",
		"scripts/run.py":         "",
		"scripts/my-tool.py":     "",
		"setup.py":               "",
		"tests/conftest.py":      "",
		"tests/test_x.py":        "",
		"pkg/__main__.py":        "",
		".venv/lib/x.py":         "",
		"build/lib/pkg/copy.py":  "",
		"pkg/sub/helper_test.py": "",
		"train.py":               "",
	})
	l, err := importcheck.Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range l.Modules {
		got = append(got, m.Name+"@"+m.Dir)
	}
	want := []string{"lib@", "lib.c@", "pkg@", "pkg.a@", "pkg.sub@", "pkg.sub.b@", "train@", "run@scripts"}
	if !slices.Equal(got, want) {
		t.Errorf("Discover modules = %v; want %v", got, want)
	}
	if !slices.Equal(l.Tests, []string{"pkg/sub/helper_test.py", "tests/test_x.py"}) {
		t.Errorf("Discover tests = %v", l.Tests)
	}
	if !slices.Equal(l.Roots, []string{"", "src"}) {
		t.Errorf("Discover roots = %v", l.Roots)
	}
	var skipped []string
	for _, s := range l.Skipped {
		skipped = append(skipped, s.Path)
	}
	slices.Sort(skipped)
	if !slices.Equal(skipped, []string{"pkg/__main__.py", "scripts/my-tool.py", "setup.py", "tests/conftest.py"}) {
		t.Errorf("Discover skipped = %v", skipped)
	}
}

// TestCheckHandMadeTree proves the checker on a tree whose outcomes are known: a module that
// imports, one that raises at import (a tpu device built at import: fails on a CPU host in both
// modes), one missing a third-party dependency, one that needs torch_tpu (fails only with it
// hidden), a script run by name from its directory, and a test file that fails collection. The
// original tree shares all but the tpu device, so only that module and the test importing it are
// the migration's.
func TestCheckHandMadeTree(t *testing.T) {
	py := python(t)
	orig, mig := t.TempDir(), t.TempDir()
	common := map[string]string{
		"pkg/__init__.py":       "",
		"pkg/ok.py":             "import torch\nX = torch.zeros(2)\n",
		"pkg/needsdep.py":       "import not_a_real_dependency_xyz\n",
		"pkg/needstpu.py":       "import torch_tpu\n",
		"pkg/broken_before.py":  "raise ValueError('broken before migration')\n",
		"scripts/helpers.py":    "VALUE = 3\n",
		"scripts/run.py":        "import helpers\nimport pkg.ok\nassert helpers.VALUE == 3\nif __name__ == '__main__':\n    raise SystemExit('main ran')\n",
		"tests/test_ok.py":      "import pkg.ok\n\ndef test_a():\n    pass\n",
		"tests/test_consts.py":  "from pkg.consts import DEV\n\ndef test_b():\n    pass\n",
		"tests/test_missing.py": "import not_a_real_dependency_xyz\n",
	}
	write(t, orig, common)
	write(t, mig, common)
	write(t, orig, map[string]string{"pkg/consts.py": "import torch\n\nDEV = torch.device('cpu')\n"})
	write(t, mig, map[string]string{"pkg/consts.py": "import torch\n\nDEV = torch.device('tpu')\n"})

	rep, err := importcheck.Check(context.Background(), mig, orig, importcheck.Options{Python: py, ModuleTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Text(true))
	if len(rep.Modes) != 2 {
		t.Fatalf("%d modes; want 2", len(rep.Modes))
	}
	for _, mr := range rep.Modes {
		class := map[string]string{}
		for _, r := range mr.Results {
			class[r.Module] = r.Class
		}
		wantTPU := importcheck.ClassOK
		if mr.Mode == importcheck.WithoutTorchTPU {
			wantTPU = importcheck.ClassPreExisting // the original needs it too
		}
		want := map[string]string{
			"pkg": "ok", "pkg.ok": "ok", "pkg.consts": "ours", "pkg.needsdep": "missing-dep",
			"pkg.broken_before": "pre-existing", "pkg.needstpu": wantTPU, "run": "ok", "helpers": "ok",
		}
		for m, w := range want {
			if class[m] != w {
				t.Errorf("%s: %s class %q; want %q", mr.Mode, m, class[m], w)
			}
		}
		for _, r := range mr.Results {
			if r.Module == "pkg.consts" && (r.Type != "RuntimeError" || r.Site != "pkg/consts.py:3" || !strings.Contains(r.Message, "tpu")) {
				t.Errorf("%s: pkg.consts failure = %+v; want RuntimeError at pkg/consts.py:3", mr.Mode, r)
			}
			if r.Module == "pkg.needsdep" && r.Dependency != "not_a_real_dependency_xyz" {
				t.Errorf("%s: pkg.needsdep dependency %q", mr.Mode, r.Dependency)
			}
		}
		c := mr.Counts
		if c.Modules != 8 || c.Failed != 1 || c.MissingDeps != 1 {
			t.Errorf("%s: counts %+v; want 8 modules, 1 failed, 1 missing dependency", mr.Mode, c)
		}
		if mr.Collect == nil {
			t.Fatalf("%s: no collection", mr.Mode)
		}
		col := map[string]string{}
		for _, e := range mr.Collect.Errors {
			col[e.Path] = e.Class
		}
		if col["tests/test_consts.py"] != "ours" || col["tests/test_missing.py"] != "missing-dep" || len(col) != 2 {
			t.Errorf("%s: collection errors %+v; want test_consts ours, test_missing missing-dep", mr.Mode, mr.Collect.Errors)
		}
		if c.CollectErrors != 1 || c.Tests != 1 {
			t.Errorf("%s: %d collection errors, %d tests; want 1 and 1", mr.Mode, c.CollectErrors, c.Tests)
		}
	}
	if rep.Failures() != 4 {
		t.Errorf("Failures() = %d; want 4 (a module and a test file, in both modes)", rep.Failures())
	}
	var codes []string
	for _, f := range rep.Findings {
		codes = append(codes, f.Code)
	}
	for _, c := range []string{importcheck.CodeImportFails, importcheck.CodeCollectFails, importcheck.CodeMissingDependency, importcheck.CodePreExisting} {
		if !slices.Contains(codes, c) {
			t.Errorf("findings lack %s: %v", c, codes)
		}
	}
}

// TestCheckWithoutOriginal: with no original every real failure is the migration's, and a module
// that kills its process is recorded (crashed) while the next process goes on with the others.
func TestCheckWithoutOriginal(t *testing.T) {
	py := python(t)
	tree := t.TempDir()
	write(t, tree, map[string]string{
		"a_dies.py": "import os\nos._exit(3)\n",
		"b_ok.py":   "X = 1\n",
		"c_slow.py": "import time\nwhile True:\n    time.sleep(0.1)\n",
	})
	rep, err := importcheck.Check(context.Background(), tree, "", importcheck.Options{Python: py, ModuleTimeout: 3 * time.Second,
		Modes: []importcheck.Mode{importcheck.WithoutTorchTPU}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Text(true))
	st := map[string]string{}
	for _, r := range rep.Modes[0].Results {
		st[r.Module] = r.Status + "/" + r.Class
	}
	want := map[string]string{"a_dies": "crashed/ours", "b_ok": "ok/ok", "c_slow": "timeout/ours"}
	for m, w := range want {
		if st[m] != w {
			t.Errorf("%s = %s; want %s", m, st[m], w)
		}
	}
}
