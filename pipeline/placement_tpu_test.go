package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
)

// tpuImportFiles is a small package whose devices are built when its
// modules are imported: a module constant, a default argument, a class
// attribute, pytest.param in a decorator, a tensor and a move at module
// level, a module-level call of a function that builds one; and, in
// function bodies, devices built only when called.
var tpuImportFiles = map[string]string{
	"mypkg/__init__.py": "from .mod import DEV, A, f\n",
	"mypkg/mod.py": `import torch

DEV = torch.device("cuda")
ZEROS = torch.zeros(2, device="cuda")
ONES = torch.ones(2).cuda()


def f(x, device=torch.device("cuda:0")):
    return x.to(device)


class A:
    dev = torch.device("cuda")


def make():
    return torch.device("cuda")


DEFAULT = make()


def run(x):
    return x.to(torch.device("cuda"))
`,
	"tests/__init__.py": "",
	"tests/test_mod.py": `import pytest
import torch

from mypkg import mod

DEV = torch.device("cuda")


@pytest.mark.parametrize("d", [pytest.param(torch.device("cuda"))])
def test_x(d):
    assert d is not None


def test_f(device=torch.device("cuda:0")):
    assert mod.f(torch.ones(1), device) is not None
`,
}

// TestTPUTargetImportsWithoutTPU migrates a package with --target tpu and,
// on this host (no TPU), imports it and collects its tests with the venv's
// python: once with torch_tpu importable (imported first) and once with a
// torch_tpu that raises ImportError first on the path. torch.device("tpu")
// raises on such a host either way, so a TPU device built on import (a
// module constant, a default argument, a class attribute, pytest.param) made
// both fail; those sites now take the portable form, and function bodies
// keep "tpu".
func TestTPUTargetImportsWithoutTPU(t *testing.T) {
	py := python(t)
	if err := exec.Command(py, "-c", "import torch, pytest").Run(); err != nil {
		t.Skipf("%s has no torch or pytest: %v", py, err)
	}
	root := t.TempDir()
	for name, text := range tpuImportFiles {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	run, err := Migrate(ctx, Options{Root: root, Target: rule.TPU})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := WriteTree(ctx, run, out); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(out, "mypkg", "mod.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "return x.to(torch.device(\"tpu\"))") {
		t.Errorf("a function body no longer names \"tpu\" on the tpu target:\n%s", mod)
	}
	blocker := t.TempDir()
	if err := os.WriteFile(filepath.Join(blocker, "torch_tpu.py"),
		[]byte("raise ImportError(\"torch_tpu is not installed here\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const script = `import sys

if sys.argv[1] == "with":
    import torch_tpu  # noqa: F401
else:
    try:
        import torch_tpu  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("torch_tpu was importable")
import pytest

import mypkg
import mypkg.mod

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests/test_mod.py"]))
`
	// Without torch_tpu, torch's backend autoload (the entry point torch_tpu
	// installs) is off too, as on a host where it was never installed.
	for _, mode := range []struct {
		name, arg, path, autoload string
	}{
		{"torch_tpu importable", "with", out, "1"},
		{"torch_tpu unimportable", "without", blocker + string(os.PathListSeparator) + out, "0"},
	} {
		cmd := exec.Command(py, "-c", script, mode.arg)
		cmd.Dir = out
		cmd.Env = append(os.Environ(), "PYTHONPATH="+mode.path, "PYTHONDONTWRITEBYTECODE=1", "CUDA_VISIBLE_DEVICES=",
			"TORCH_DEVICE_BACKEND_AUTOLOAD="+mode.autoload)
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: importing the migrated package or collecting its tests failed: %v\n%s", mode.name, err, outputTail(got))
			continue
		}
		if !strings.Contains(string(got), "2 tests collected") {
			t.Errorf("%s: want 2 tests collected:\n%s", mode.name, outputTail(got))
		}
	}
}

// outputTail is the end of a process's output, for failures.
func outputTail(b []byte) string {
	const n = 3000
	if len(b) > n {
		return "..." + string(b[len(b)-n:])
	}
	return string(b)
}
