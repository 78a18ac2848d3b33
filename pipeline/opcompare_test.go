package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/hostbuild"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// opCompareFixtures are the e2e fixtures whose original op is called at the
// Python-function level (compare_ops.py's CALLERS): load_inline extensions,
// setup.py CUDAExtensions (a compiled module, TORCH_LIBRARY ops) and an mmcv
// style PYBIND11_MODULE source tree (registry_loss).
var opCompareFixtures = []string{"inline_act", "method_ext", "chain_gelu", "row_stats", "registry_loss"}

// opCompareUncallable are the e2e fixtures whose original op cannot be called
// on CPU tensors here, with why: their extensions define ops with
// TORCH_LIBRARY only and no PYBIND11_MODULE, so the package's own
// `from . import _C` cannot import the built module (nor would it a CUDA
// build). The test checks that the comparison says exactly this; when it
// stops saying it, the fixture belongs in opCompareFixtures.
var opCompareUncallable = map[string]string{
	"torchlib_split": "failed on CPU tensors: ImportError: dynamic module does not define module export function (PyInit__C)",
	"torchlib_act":   "failed on CPU tensors: ImportError: dynamic module does not define module export function (PyInit__C)",
}

// opCompare is one fixture ready for the comparison: its migrated tree, the
// inputs (from the PALLASIFY_KERNEL examples) and the ORIGINAL functions'
// outputs on them, computed in the sandbox with the extension built for the
// CPU.
type opCompare struct {
	py, name, migrated, plan, outputs string
}

// TestOpCompareE2E compares each wired op at the Python-function level: the
// original function (the one the wiring rewrote) called on CPU tensors
// through the repository's extension built for the CPU (validators/hostbuild,
// sandboxed) against the migrated kernel module's Pallas function in
// interpret mode, on the header's example inputs, under the numeric
// validator's float32 tolerances. The migrated tree is the fixture with its
// want.patch applied (TestE2EFixtures checks the patch is what migrate writes).
func TestOpCompareE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	for _, name := range opCompareFixtures {
		t.Run(name, func(t *testing.T) {
			c := prepareOpCompare(t, name)
			out, err := c.compare(c.migrated)
			if err != nil {
				t.Fatalf("original vs migrated: %v\n%s", err, out)
			}
			if !strings.Contains(out, "mismatches 0") {
				t.Fatalf("no op was compared:\n%s", out)
			}
			t.Logf("%s", out)
		})
	}
	for name, why := range opCompareUncallable {
		t.Run(name, func(t *testing.T) {
			c := prepareOpCompare(t, name)
			out, err := c.compare(c.migrated)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, why) {
				t.Fatalf("the original was expected not to be callable on CPU tensors (%s); the comparison says (%v):\n%s", why, err, out)
			}
			t.Logf("not compared: the original %s", why)
		})
	}
}

// TestOpCompareCatchesWrongKernel breaks one migrated kernel module (exp
// becomes exp2 in a copy of the tree): the comparison against the original
// must fail and name the op.
func TestOpCompareCatchesWrongKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	c := prepareOpCompare(t, "inline_act")
	broken := filepath.Join(t.TempDir(), "tree")
	copyPlain(t, c.migrated, broken)
	mod := filepath.Join(broken, "inline_act", "_pallas_scaled_silu_kernel.py")
	src, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	mutated := strings.ReplaceAll(string(src), "jnp.exp(", "jnp.exp2(")
	if mutated == string(src) {
		t.Fatalf("%s has no jnp.exp( to break", mod)
	}
	if err := os.WriteFile(mod, []byte(mutated), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := c.compare(broken)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the broken kernel was not caught (%v):\n%s", err, out)
	}
	if !strings.Contains(out, "FAIL: MISMATCH scaled_silu:") || !strings.Contains(out, "max abs") {
		t.Fatalf("the failure does not name the op and its error:\n%s", out)
	}
	t.Logf("caught: %s", strings.TrimSpace(out))
}

func (c *opCompare) compare(tree string) (string, error) {
	out, err := exec.Command(c.py, "../fixtures/e2e/compare_ops.py", "migrated", tree, c.name, c.plan, c.outputs).CombinedOutput()
	return string(out), err
}

func prepareOpCompare(t *testing.T, name string) *opCompare {
	t.Helper()
	py := e2ePython(t)
	sb := &sandbox.Sandbox{}
	if err := sb.Check(context.Background()); err != nil {
		stackMissing(t, "the original runs only in the sandbox, and bubblewrap is unavailable: "+err.Error())
	}
	orig, err := filepath.Abs(filepath.Join("..", "fixtures", "e2e", name))
	if err != nil {
		t.Fatal(err)
	}
	c := &opCompare{py: py, name: name, migrated: migratedFromPatch(t, orig), plan: t.TempDir()}
	out, err := exec.Command(py, "../fixtures/e2e/compare_ops.py", "prepare", c.migrated, name, c.plan).CombinedOutput()
	if err != nil {
		t.Fatalf("prepare: %v\n%s", err, out)
	}
	c.outputs = originalOutputs(t, sb, py, orig, name, c.plan)
	return c
}

// migratedFromPatch is a copy of the fixture with its want.patch applied.
func migratedFromPatch(t *testing.T, orig string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "migrated")
	copyPlain(t, orig, dir)
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", orig+".want.patch")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply %s.want.patch: %v\n%s", orig, err, out)
	}
	return dir
}

// originalOutputs builds every extension of the original fixture for the
// CPU and runs compare_ops.py's original mode with them, in the sandbox, in
// a copy of the fixture holding the plan; it returns the outputs' directory.
// A refused build fails the test with its code: the comparison cannot run.
func originalOutputs(t *testing.T, sb *sandbox.Sandbox, py, orig, name, plan string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cache := opCompareCache()
	built, err := buildOriginal(ctx, t, sb, cache, py, orig)
	if err != nil {
		t.Fatalf("%s: %v: the op comparison cannot run", name, err)
	}
	root := filepath.Join(t.TempDir(), "root")
	copyPlain(t, orig, root)
	copyPlain(t, plan, filepath.Join(root, "_opcompare_plan"))
	driver, err := os.ReadFile("../fixtures/e2e/compare_ops.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "_opcompare.py"), driver, 0o644); err != nil {
		t.Fatal(err)
	}
	capDir := filepath.Join(t.TempDir(), "capture")
	res, err := hostbuild.Run(ctx, sb, hostbuild.RunRequest{Root: root, Built: built, Python: py, CacheDir: cache,
		Entry: []string{"_opcompare.py", "original", name, "_opcompare_plan"}, CaptureDir: capDir, Timeout: 4 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("%s: the original functions on CPU tensors (sandboxed, exit %d):\n%s", name, res.ExitCode, res.Output)
	}
	t.Logf("original (CPU-built %d module(s), cached run %v): %s", len(built), res.Cached, strings.TrimSpace(res.Output))
	return filepath.Join(capDir, "opcompare")
}

func opCompareCache() string {
	if d := os.Getenv("PALLASIFY_HOSTBUILD_CACHE"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "pallasify-hostbuild-cache")
}

// buildOriginal builds every extension of the tree at orig for the CPU
// (sandboxed, cached); an extension that cannot be built is an error that
// names it and the builder's code.
func buildOriginal(ctx context.Context, t *testing.T, sb *sandbox.Sandbox, cache, py, orig string) ([]*hostbuild.Built, error) {
	t.Helper()
	files, err := kernels.ListFiles(orig)
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := kernels.Discover(ctx, orig, files)
	exts := kernels.FindExtensions(orig, inv, files)
	if len(exts) == 0 {
		return nil, errors.New("no extension found")
	}
	var built []*hostbuild.Built
	for _, e := range exts {
		req, why := hostRequest(orig, e, py)
		if why != "" {
			return nil, fmt.Errorf("the original extension cannot be built for the CPU (%s)", why)
		}
		b, err := hostbuild.Build(ctx, sb, cache, req)
		var be *hostbuild.BuildError
		if errors.As(err, &be) {
			return nil, fmt.Errorf("the original extension %s is refused for the CPU (%w)", e.Module, be)
		}
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, b)
	}
	return built, nil
}

// TestOpCompareSaysWhenRefused: where the original extension cannot be
// built for the CPU (here inline_act with an include the emulator lacks),
// the comparison reports the builder's code instead of passing.
func TestOpCompareSaysWhenRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := e2ePython(t)
	sb := &sandbox.Sandbox{}
	if err := sb.Check(context.Background()); err != nil {
		stackMissing(t, "the original runs only in the sandbox, and bubblewrap is unavailable: "+err.Error())
	}
	orig := filepath.Join(t.TempDir(), "inline_act")
	copyPlain(t, filepath.Join("..", "fixtures", "e2e", "inline_act"), orig)
	ops := filepath.Join(orig, "inline_act", "ops.py")
	src, err := os.ReadFile(ops)
	if err != nil {
		t.Fatal(err)
	}
	refused := strings.Replace(string(src), "#include <torch/extension.h>\n", "#include <torch/extension.h>\n#include <kittens.cuh>\n", 1)
	if refused == string(src) {
		t.Fatal("no include line to extend")
	}
	if err := os.WriteFile(ops, []byte(refused), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = buildOriginal(context.Background(), t, sb, opCompareCache(), py, orig)
	var be *hostbuild.BuildError
	if !errors.As(err, &be) || be.Code != hostbuild.CodeInclude || !strings.Contains(err.Error(), "inline_act_ext") {
		t.Fatalf("want the build of inline_act_ext refused with %s, got %v", hostbuild.CodeInclude, err)
	}
	t.Logf("not compared: %v", err)
}

// hostRequest is the builder's request for an extension as the repository
// builds it, or why there is none.
func hostRequest(root string, e *kernels.Extension, py string) (hostbuild.BuildRequest, string) {
	req := hostbuild.BuildRequest{Root: root, Module: e.Module, Sources: e.Sources, IncludeDirs: e.IncludeDirs, Defines: e.Defines, Python: py}
	switch {
	case e.Module == "":
		return req, e.Problem
	case e.Origin == kernels.OriginLoadInline && len(e.CUDA) == 0:
		return req, "load_inline " + e.Module + ": cuda_sources cannot be read (" + e.Problem + ")"
	case e.Origin == kernels.OriginLoadInline:
		req.Sources = nil
		req.Inline = &hostbuild.InlineSources{Name: e.Module, CPP: e.CPP, CUDA: e.CUDA, Functions: e.Functions}
	case len(e.Sources) == 0:
		return req, e.Origin + " " + e.Module + ": no source list can be read (" + e.Problem + ")"
	}
	return req, ""
}

// copyPlain copies the regular files and directories of src to dst.
func copyPlain(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
