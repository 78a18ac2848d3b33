package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/emulator"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// emuCheck returns an EmulatorCheck with a private cache, or skips when g++
// is missing. Without bubblewrap the compile runs unconfined (the sandbox
// has its own tests).
func emuCheck(t *testing.T) EmulatorCheck {
	t.Helper()
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed")
	}
	noSB := (&sandbox.Sandbox{}).Check(context.Background()) != nil
	return EmulatorCheck{NoSandbox: noSB, CacheDir: t.TempDir()}
}

func kernelRun(t *testing.T, root string) *Run {
	t.Helper()
	paths, err := kernels.ListFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	r := &Run{Root: root}
	for _, p := range paths {
		r.Files = append(r.Files, &File{Path: p, Lang: langOf(p)})
	}
	return r
}

// Every fixture kernel with a spec compiles against the emulator; a second
// run answers from the cache.
func TestEmulatorFixtures(t *testing.T) {
	cfg := emuCheck(t)
	root := filepath.Join("..", "fixtures", "kernels")
	run := func() (*Run, time.Duration) {
		st := NewKernelStage()
		attachEmulator(Options{Discover: st, Emulator: &cfg})
		r := kernelRun(t, root)
		t0 := time.Now()
		if err := st.Run(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		return r, time.Since(t0)
	}
	r, cold := run()
	compiled := 0
	for _, k := range r.Kernels {
		t.Logf("%-28s %-16s %-10s %s", k.Name, k.Origin, k.SpecStatus, k.EmuStatus)
		switch {
		case k.Origin == kernels.OriginTriton:
			// Its reference is Triton's interpreter, run by the validate stage.
			if k.EmuStatus != "not-run" {
				t.Errorf("%s: %q", k.Name, k.EmuStatus)
			}
		case k.EmuStatus == EmuCompiled:
			compiled++
		default:
			t.Errorf("%s (%s): emulator status %q, want compiled", k.Name, k.Path, k.EmuStatus)
		}
	}
	if compiled < 14 {
		t.Errorf("%d kernels compiled, want every fixture kernel (at least 14)", compiled)
	}
	files, _ := filepath.Glob(filepath.Join(cfg.CacheDir, "*.json"))
	if len(files) != compiled {
		t.Errorf("%d cache files, want %d", len(files), compiled)
	}
	r2, warm := run()
	for i, k := range r2.Kernels {
		if k.EmuStatus != r.Kernels[i].EmuStatus {
			t.Errorf("%s: second run %q, first %q", k.Name, k.EmuStatus, r.Kernels[i].EmuStatus)
		}
	}
	t.Logf("%d kernels compiled: cold %v, cached %v", compiled, cold.Round(time.Millisecond), warm.Round(time.Millisecond))
	// The cache is what answers: a planted entry is returned as is.
	if err := os.WriteFile(files[0], []byte(`{"version":"`+emulator.StatusCacheVersion+`","status":"compile-error: planted"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r3, _ := run()
	planted := 0
	for _, k := range r3.Kernels {
		if k.EmuStatus == "compile-error: planted" {
			planted++
		}
	}
	if planted != 1 {
		t.Errorf("planted cache entry seen %d times, want 1", planted)
	}
}

// writeKernel writes the vec_add_scale fixture with body replaced into a
// temp repo and discovers it.
func discoverOne(t *testing.T, body string) *kernels.Kernel {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "fixtures", "kernels", "vec_add_scale", "kernel.cu"))
	if err != nil {
		t.Fatal(err)
	}
	const orig = "    out[i] = alpha * (a[i] + b[i]);"
	if !strings.Contains(string(src), orig) {
		t.Fatal("fixture changed: kernel body not found")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kernel.cu"), []byte(strings.Replace(string(src), orig, body, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	inv, _ := kernels.Discover(context.Background(), dir, []string{"kernel.cu"})
	if len(inv.Kernels) != 1 {
		t.Fatalf("%d kernels discovered", len(inv.Kernels))
	}
	return inv.Kernels[0]
}

func TestEmulatorStatuses(t *testing.T) {
	cfg := emuCheck(t)
	ctx := context.Background()
	e := NewEmulator(cfg)
	tests := []struct {
		name, body string
		prep       func(k *kernels.Kernel)
		want       string // prefix
	}{
		{"plain", "    out[i] = alpha * (a[i] + b[i]);", nil, EmuCompiled},
		{"inline asm", `    float v; asm volatile("mov.f32 %0, %1;" : "=f"(v) : "f"(a[i])); out[i] = v;`, nil, "unsupported: inline asm"},
		{"texture", "    out[i] = tex1Dfetch<float>(0, i);", nil, "unsupported: texture fetch"},
		{"type error", "    out[i] = alpha * (a[i] + b[i]) + undeclared_thing;", nil, "compile-error: kernel.cu:"},
		{"no spec", "    out[i] = a[i];", func(k *kernels.Kernel) { k.Spec = nil }, EmuCompiled},
		{"no spec, template", "    out[i] = a[i];", func(k *kernels.Kernel) {
			k.Spec = nil
			k.Unit.Source = strings.Replace(k.Unit.Source, "__global__ void", "template <typename T>\n__global__ void", 1)
		}, EmuNeedsSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := discoverOne(t, tc.body)
			if tc.prep != nil {
				tc.prep(k)
			}
			got := e.Status(ctx, k)
			t.Logf("%s: %s", tc.name, got)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("status %q, want prefix %q", got, tc.want)
			}
			if tc.want == "compile-error: kernel.cu:" && !strings.Contains(got, "undeclared_thing") {
				t.Errorf("compile error does not name the problem: %q", got)
			}
		})
	}
	// No compiler: not-run with the reason, and nothing cached.
	nc := cfg
	nc.CXX = "pallasify-no-such-compiler"
	nc.CacheDir = t.TempDir()
	k := discoverOne(t, "    out[i] = a[i];")
	if got := NewEmulator(nc).Status(ctx, k); !strings.HasPrefix(got, "not-run: no C++ compiler") {
		t.Errorf("without a compiler: %q", got)
	}
	if files, _ := os.ReadDir(nc.CacheDir); len(files) != 0 {
		t.Errorf("not-run was cached: %d files", len(files))
	}
	// Cancelled: not-run.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got := NewEmulator(cfg).Status(cctx, k); !strings.HasPrefix(got, EmuNotRun) {
		t.Errorf("cancelled: %q", got)
	}
}

// The stage runs the hook with bounded concurrency and without it reports
// not-run.
func TestKernelStageEmulateConcurrency(t *testing.T) {
	root := filepath.Join("..", "fixtures", "kernels")
	var mu sync.Mutex
	cur, peak, calls := 0, 0, 0
	st := NewKernelStage()
	st.EmulateConcurrency = 3
	st.Emulate = func(ctx context.Context, k *kernels.Kernel) string {
		mu.Lock()
		cur++
		calls++
		peak = max(peak, cur)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		cur--
		mu.Unlock()
		return "compiled"
	}
	r := kernelRun(t, root)
	if err := st.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if calls < 12 || peak > 3 || peak < 2 {
		t.Errorf("calls %d, peak concurrency %d (limit 3)", calls, peak)
	}
	plain := NewKernelStage()
	attachEmulator(Options{Discover: plain}) // no Emulator: no hook
	r = kernelRun(t, root)
	if err := plain.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	for _, k := range r.Kernels {
		if k.Origin != kernels.OriginTriton && k.EmuStatus != EmuNotRun {
			t.Errorf("%s: %q without an emulator", k.Name, k.EmuStatus)
		}
	}
}
