package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// TestKernelScanFromRulesParse: the kernel scans the analyze stage makes
// from the rules' parse (File.kernelPy) give discovery the inventory and
// problems it finds reading and parsing every file itself, on the fixture
// trees with Python-built kernels (load_inline, CuPy, Triton, setup.py
// extensions) and, with PALLASIFY_CORPUS=DIR, every tree of the corpus.
func TestKernelScanFromRulesParse(t *testing.T) {
	roots := []string{
		filepath.Join("..", "fixtures", "kernels"),
		filepath.Join("..", "fixtures", "e2e"),
		filepath.Join("..", "fixtures", "triton"),
		filepath.Join("..", "fixtures", "triton_e2e"),
		filepath.Join("..", "fixtures", "triton_bindings"),
		filepath.Join("..", "fixtures", "projects"),
	}
	if dir := os.Getenv("PALLASIFY_CORPUS"); dir != "" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() {
				roots = append(roots, filepath.Join(dir, e.Name()))
			}
		}
	}
	scannedFiles := 0
	for _, root := range roots {
		t.Run(filepath.Base(root), func(t *testing.T) {
			ctx := context.Background()
			opts, err := Options{Root: root}.normalize()
			if err != nil {
				t.Fatal(err)
			}
			st := &state{opts: opts, scanKernels: true}
			r := &Run{Root: opts.Root}
			if err := st.analyze(ctx, r); err != nil {
				t.Fatal(err)
			}
			var files []string
			byPath := map[string]*File{}
			for _, f := range r.Files {
				byPath[f.Path] = f
				if f.Skipped == "" {
					files = append(files, f.Path)
				}
				if f.kernelPy != nil {
					scannedFiles++
				}
			}
			scan := func(rel string) bool { return byPath[rel].mayHoldKernels() }
			inv, probs := kernels.DiscoverScan(ctx, r.Root, files, scan)
			inv2, probs2 := kernels.DiscoverScanned(ctx, r.Root, files, scan,
				func(rel string) *kernels.PythonScan { return byPath[rel].kernelScanned() })
			want, got := jsonOf(t, inv, probs), jsonOf(t, inv2, probs2)
			if want != got {
				t.Errorf("discovery from the rules' parse differs:\n--- reading every file\n%s\n--- from the rules' parse\n%s", want, got)
			}
		})
	}
	if scannedFiles == 0 {
		t.Fatal("the analyze stage scanned no file for kernels: the test compares nothing")
	}
	t.Logf("%d files scanned from the rules' parse", scannedFiles)
}

func jsonOf(t *testing.T, v ...any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
