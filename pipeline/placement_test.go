package pipeline

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
)

// placementFixture is the fixture project of the device placement cases.
var placementFixture = filepath.Join("..", "fixtures", "projects", "device_pkg")

// TestPlacementImportDoesNotProbe imports every library module of the
// migrated device_pkg with torch's accelerator probes made to fail: importing
// a library module must not look for the accelerator (a module-level DEVICE
// would, and on CUDA that poisons fork). Then it runs them on this host, where
// the device they find on first use is the CPU, and a caller passing
// device=None explicitly still gets None (the parameter's new default is a
// sentinel, not None).
func TestPlacementImportDoesNotProbe(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	run, err := Migrate(ctx, Options{Root: placementFixture, Exclude: fixtureExclude})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := WriteTree(ctx, run, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "mypkg", "_pallasify_device.py")); err != nil {
		t.Fatalf("no helper module in the migrated package: %v", err)
	}
	script := `import sys
import torch

sys.path[:0] = [sys.argv[1], sys.argv[1] + "/scripts"]
probes = []
real = torch.accelerator.is_available, torch.cuda.is_available


def probe(*args, **kwargs):
    probes.append(1)
    raise RuntimeError("the accelerator was probed while importing")


torch.accelerator.is_available = probe
torch.cuda.is_available = probe
import helpers
import mypkg
import mypkg.model
import mypkg.utils.mem

assert not probes, probes
torch.accelerator.is_available, torch.cuda.is_available = real
cfg = mypkg.NetConfig()
net = mypkg.Net(cfg)
y = net(torch.ones(2, 16))
m = mypkg.place(torch.nn.Linear(2, 2), rank=1)
print(cfg.device, y.device, next(m.parameters()).device, mypkg.peak_gib(), mypkg.model.free_memory())
print([t.device.type for t in helpers.batch_to_device([torch.ones(1)])], mypkg.utils.mem.on_rank(torch.ones(1), 3).device)
import mypkg.guarded  # the same, torch imported under a guard
import mypkg.late  # module-level code that uses the device before a late import

print(mypkg.late.DEFAULT, mypkg.late.ones().device, mypkg.guarded.describe())
# an explicit device=None still reaches the body as None (the original passed it on to torch)
label, helper_label = mypkg.model.device_label, helpers.device_label
print(label(None), label(), label(device=None), helper_label(None), helper_label())
`
	cmd := exec.Command(py, "-c", script, out)
	cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES=", "PYTHONDONTWRITEBYTECODE=1", "TORCH_DEVICE_BACKEND_AUTOLOAD=0")
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("migrated package: %v\n%s", err, got)
	}
	want := "cpu cpu cpu 0.0 None\n['cpu'] cpu\ncpu cpu cpu cpu\nNone cpu None None cpu\n"
	if !strings.HasSuffix(string(got), want) {
		t.Errorf("migrated package printed\n%s\nwant it to end with\n%s", got, want)
	}
}

// TestPlacementWriteOutPatchAgree checks that --write, --out and --patch
// (and the dry run's diff) give the same tree, the new helper module
// included.
func TestPlacementWriteOutPatchAgree(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	run, err := Migrate(ctx, Options{Root: placementFixture, Exclude: fixtureExclude})
	if err != nil {
		t.Fatal(err)
	}
	patch := run.Patch()
	if !bytes.Contains(patch, []byte("new file mode 100644\n--- /dev/null\n+++ b/mypkg/_pallasify_device.py\n")) {
		t.Fatalf("the patch does not create mypkg/_pallasify_device.py:\n%s", patch)
	}
	out := filepath.Join(tmp, "out")
	if err := WriteTree(ctx, run, out); err != nil {
		t.Fatal(err)
	}
	inPlace := filepath.Join(tmp, "write")
	copyTree(t, placementFixture, inPlace)
	wrun, err := Migrate(ctx, Options{Root: inPlace, Exclude: fixtureExclude})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteInPlace(ctx, wrun); err != nil {
		t.Fatal(err)
	}
	patched := filepath.Join(tmp, "patch")
	copyTree(t, placementFixture, patched)
	pf := filepath.Join(tmp, "p.patch")
	if err := os.WriteFile(pf, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "apply", "--unsafe-paths", pf)
	cmd.Dir = patched
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, b)
	}
	want := treeFiles(t, out)
	for _, dir := range []string{inPlace, patched} {
		got := treeFiles(t, dir)
		for p, b := range want {
			if g, ok := got[p]; !ok {
				t.Errorf("%s: %s missing", filepath.Base(dir), p)
			} else if g != b {
				t.Errorf("%s: %s differs from --out:\n%s\n--- --out:\n%s", filepath.Base(dir), p, g, b)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%s: %s not in --out", filepath.Base(dir), p)
			}
		}
	}
}

// TestPlacementHelperCompleted runs the device rules first, then every rule
// over the result: the second run adds the memory helper to the package's
// existing helper module (and nothing twice), and a third run changes nothing.
func TestPlacementHelperCompleted(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "tree")
	copyTree(t, placementFixture, dir)
	helper := filepath.Join(dir, "mypkg", "_pallasify_device.py")
	counts := func() (int, int) {
		b, err := os.ReadFile(helper)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("\ndef pallasify_device(")), bytes.Count(b, []byte("\ndef _accelerator_memory("))
	}
	for i, sel := range [][]string{{"PDV"}, nil, nil} {
		run, err := Migrate(ctx, Options{Root: dir, Exclude: fixtureExclude, Select: sel})
		if err != nil {
			t.Fatal(err)
		}
		changed := len(run.ChangedFiles())
		if i == 2 && changed != 0 {
			t.Errorf("third run changes %d files:\n%s", changed, run.Patch())
		}
		if _, err := WriteInPlace(ctx, run); err != nil {
			t.Fatal(err)
		}
		dev, mem := counts()
		wantMem := 0
		if i > 0 {
			wantMem = 1
		}
		if dev != 1 || mem != wantMem {
			t.Errorf("run %d: the helper module defines pallasify_device %d times and _accelerator_memory %d times (want 1, %d)", i+1, dev, mem, wantMem)
		}
	}
}

// treeFiles maps every regular file under dir (slash paths) to its content,
// golden patches left out.
func treeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(filepath.Base(rel), "want.") {
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHelperModulesRuffClean holds every helper module a migration of
// device_pkg writes, for each target, to RuffClean: a module pallasify
// writes into a repository reads like code a person formatted. device_pkg's
// library modules need every shared definition (pallasify_device,
// DEVICE_ON_FIRST_USE, device_at, the memory helper of each target).
func TestHelperModulesRuffClean(t *testing.T) {
	helperDefs := map[rule.Target][]string{
		rule.Portable: {"def pallasify_device(", "DEVICE_ON_FIRST_USE = ", "def device_at(", "def _accelerator_memory("},
		rule.TPU:      {"def _tpu_memory("},
	}
	py := python(t)
	ctx := context.Background()
	for _, target := range rule.Targets {
		run, err := Migrate(ctx, Options{Root: placementFixture, Exclude: fixtureExclude, Target: target})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out")
		if err := WriteTree(ctx, run, out); err != nil {
			t.Fatal(err)
		}
		files := GeneratedPaths(run, out)
		helper, err := os.ReadFile(filepath.Join(out, "mypkg", helperFile))
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		for _, def := range helperDefs[target] {
			if !strings.Contains(string(helper), "\n"+def) {
				t.Errorf("%s: %s does not define %q", target, helperFile, def)
			}
		}
		t.Run(string(target), func(t *testing.T) { RuffClean(t, py, files) })
	}
}
