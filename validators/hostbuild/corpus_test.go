package hostbuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The corpus measurements are benchmarks, not tests: they run only when
// PALLASIFY_HOSTBUILD_CORPUS names the corpus directory
// (../shared/corpus), log what they measured, and fail only when the
// machinery itself breaks (not when a kernel is refused).

func corpusDir(t *testing.T) string {
	d := os.Getenv("PALLASIFY_HOSTBUILD_CORPUS")
	if d == "" {
		t.Skip("set PALLASIFY_HOSTBUILD_CORPUS to the corpus directory to measure it")
	}
	return d
}

// copyCorpus copies a corpus folder (read-only) to a temporary directory.
func copyCorpus(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := copyTree(dir, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestCorpusMMCV builds mmcv-ops' extension (mmcv._ext: csrc/pytorch/*.cpp,
// csrc/pytorch/cuda/*.cu, as mmcv's setup.py lists them for MMCV_WITH_CUDA)
// for the CPU, then runs each upstream test file in tests/test_ops against
// it with capture on, and logs the per-kernel outcome.
func TestCorpusMMCV(t *testing.T) {
	root := copyCorpus(t, filepath.Join(corpusDir(t), "mmcv-ops"))
	py := testPython(t)
	sb := testSandbox(t)
	cache := testCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	var sources []string
	for _, pat := range []string{"mmcv/ops/csrc/pytorch/*.cpp", "mmcv/ops/csrc/pytorch/cuda/*.cu", "mmcv/ops/csrc/pytorch/cuda/*.cpp"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			sources = append(sources, filepath.ToSlash(rel))
		}
	}
	sort.Strings(sources)
	start := time.Now()
	built, err := Build(ctx, sb, cache, BuildRequest{Root: root, Module: "mmcv._ext", Sources: sources, Python: py,
		IncludeDirs: []string{"mmcv/ops/csrc/common", "mmcv/ops/csrc/common/cuda"}, Defines: map[string]string{"MMCV_WITH_CUDA": ""}})
	var be *BuildError
	if errors.As(err, &be) {
		t.Logf("mmcv._ext refused: %v", be)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mmcv._ext: %d sources, %d kernels, %d launch sites, %d stubbed symbols, cached=%v, %.0fs",
		len(sources), len(built.Kernels), len(built.Launches), len(built.Missing), built.Cached, time.Since(start).Seconds())
	// the subset lacks mmcv's package __init__ files and mmengine: the
	// stand-ins the capture stage gives it (ShimFiles, the one table)
	shims := writeShimDir(t, ShimFiles([]string{"mmcv", "mmcv/ops", "mmcv/utils"}, []string{"mmengine"}))
	tests, _ := filepath.Glob(filepath.Join(root, "tests", "test_ops", "test_*.py"))
	captured := map[string]int{}
	for _, tf := range tests {
		rel, _ := filepath.Rel(root, tf)
		start := time.Now()
		res, err := Run(ctx, sb, RunRequest{Root: root, Built: []*Built{built}, Python: py, Shims: []string{shims},
			Entry: []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", rel}, Timeout: 15 * time.Minute, CacheDir: cache})
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		kernels := map[string]bool{}
		for _, l := range res.Launches {
			kernels[l.Kernel] = true
			captured[l.Kernel]++
		}
		t.Logf("%-40s passed %3d failed %3d skipped %3d errors %d  kernels captured %d  cached=%v %.0fs", rel, res.Passed, res.Failed, res.Skipped, res.Error, len(kernels), res.Cached, time.Since(start).Seconds())
		if res.Failed > 0 || res.Error > 0 || res.Passed == 0 {
			t.Logf("  output tail:\n%s", tail(res.Output, 3000))
		}
	}
	n := 0
	var missing []string
	for _, k := range built.Kernels {
		if captured[k] > 0 {
			n++
		} else {
			missing = append(missing, k)
		}
	}
	t.Logf("kernels: %d in the build, %d captured by the upstream tests; not captured: %v", len(built.Kernels), n, missing)
}

var loadInlineRe = regexp.MustCompile(`\bload_inline\s*\(`)

// TestCorpusKernelBench runs every model_new_ex_*.py with load_inline:
// discovery (the load_inline call is recorded), a CPU build of its sources,
// then the KernelBench check (ModelNew against the reference Model of
// model_ex_*.py on get_inputs()) with capture on.
func TestCorpusKernelBench(t *testing.T) {
	root := copyCorpus(t, filepath.Join(corpusDir(t), "kernelbench-prompts"))
	py := testPython(t)
	sb := testSandbox(t)
	cache := testCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	files, _ := filepath.Glob(filepath.Join(root, "src", "kernelbench", "prompts", "model_new_ex_*.py"))
	more, _ := filepath.Glob(filepath.Join(root, "src", "kernelbench", "prompts", "*", "model_new_ex_*.py"))
	files = append(files, more...)
	for _, f := range files {
		b, _ := os.ReadFile(f)
		rel, _ := filepath.Rel(root, f)
		if !loadInlineRe.Match(b) {
			t.Logf("%-60s no load_inline (not a CUDA extension)", rel)
			continue
		}
		ref := refModel(f)
		if ref == "" {
			t.Logf("%-60s no reference model_ex file", rel)
			continue
		}
		refRel, _ := filepath.Rel(root, ref)
		entry := []string{"-m", "pallasify_hostrt.drive_model", rel, refRel}
		disc, err := Run(ctx, sb, RunRequest{Root: root, Python: py, Entry: entry, Discover: true, Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if len(disc.Requests) == 0 {
			t.Logf("%-60s no load_inline call reached: %s", rel, lastLine(disc.Output))
			continue
		}
		var builts []*Built
		refused := ""
		for _, d := range disc.Requests {
			bt, err := Build(ctx, sb, cache, d.Request(root))
			var be *BuildError
			if errors.As(err, &be) {
				refused = be.Error()
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			builts = append(builts, bt)
		}
		if refused != "" {
			t.Logf("%-60s refused: %s", rel, refused)
			continue
		}
		res, err := Run(ctx, sb, RunRequest{Root: root, Python: py, Entry: entry, Built: builts, Timeout: 10 * time.Minute, CacheDir: cache})
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		kernels := map[string]bool{}
		for _, l := range res.Launches {
			kernels[l.Instance] = true
		}
		var ks []string
		for k := range kernels {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		t.Logf("%-60s built %d module(s), check exit %d (%s), captured kernels %v", rel, len(builts), res.ExitCode, lastLine(res.Output), ks)
	}
}

// refModel pairs model_new_ex_X.py with model_ex_X.py (or, for a variant
// like model_new_ex_add_hip.py, model_ex_add.py).
func refModel(newPath string) string {
	dir := filepath.Dir(newPath)
	name := strings.TrimPrefix(strings.TrimSuffix(filepath.Base(newPath), ".py"), "model_new_ex_")
	for {
		p := filepath.Join(dir, fmt.Sprintf("model_ex_%s.py", name))
		if fileExists(p) {
			return p
		}
		i := strings.LastIndex(name, "_")
		if i < 0 {
			return ""
		}
		name = name[:i]
	}
}

// writeShimDir writes shim files into a world-readable directory (the
// sandboxed run is another user).
func writeShimDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
