package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

const auditPatch = `diff --git a/pkg/a.py b/pkg/a.py
--- a/pkg/a.py
+++ b/pkg/a.py
@@ -1,4 +1,5 @@
 import torch
-x = torch.device("cuda")
+from ._pallasify_device import pallasify_device
+x = pallasify_device()
 y = 1
 z = "cuda"
@@ -10,2 +11,2 @@ def f():
-    a = "cuda:0"
+    a = pallasify_device()
     b = 2
diff --git a/pkg/_pallasify_device.py b/pkg/_pallasify_device.py
new file mode 100644
--- /dev/null
+++ b/pkg/_pallasify_device.py
@@ -0,0 +1,2 @@
+import torch
+D = ("cuda", "tpu")
`

func TestAddedLinesAndHunks(t *testing.T) {
	if n := countHunks([]byte(auditPatch)); n != 3 {
		t.Errorf("countHunks = %d, want 3", n)
	}
	got := addedLines([]byte(auditPatch))
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"pkg/_pallasify_device.py:1", "pkg/_pallasify_device.py:2", "pkg/a.py:11", "pkg/a.py:2", "pkg/a.py:3"}
	if !slices.Equal(keys, want) {
		t.Errorf("addedLines = %v, want %v", keys, want)
	}
}

// TestScanAndSilent runs audit/scan.py on a small tree: prose (comments,
// docstrings, identifiers) is not a CUDA site; code naming CUDA is, and a
// site is silent only where no finding and no line we wrote covers it.
func TestScanAndSilent(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	src := `"""Runs on CUDA devices."""
import torch
import cupy  # a CUDA-only module
use_cuda = True  # the code's own name
def f(x):
    "cuda"
    if x.is_cuda:
        return x.to("cuda:1")
    return torch.device(f"cuda:{x}"), dict(accelerator="gpu"), "label"
from .cuda import Scaler  # the repository's own module
BACKENDS = {"cuda": "nccl", "tpu": "tpu_dist"}
ok = x.device.type in ("cuda", "tpu")
`
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_pallasify_device.py"), []byte(`X = "cuda"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.py"), []byte("def (\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{HostBase: py, Timeout: 60e9}
	sites, unparsed, err := scanCUDASites(context.Background(), o, dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, s := range sites {
		if s.Path != "m.py" {
			t.Errorf("site in %s: only m.py has CUDA code", s.Path)
		}
		lines = append(lines, s.Line)
	}
	if want := []int{3, 7, 8, 9, 9}; !slices.Equal(lines, want) {
		t.Errorf("site lines = %v, want %v (%+v)", lines, want, sites)
	}
	if len(unparsed) != 1 {
		t.Errorf("unparsed = %v, want bad.py", unparsed)
	}
	silent := silentSites(sites, map[string]bool{"m.py:7": true, "m.py:3": true}, nil)
	var sl []int
	for _, s := range silent {
		sl = append(sl, s.Line)
	}
	if want := []int{8, 9}; !slices.Equal(sl, want) {
		t.Errorf("silent lines = %v, want %v", sl, want)
	}
	// A block finding on the if (line 7) covers line 8, not line 9; one on
	// the def (line 5) covers both.
	for _, c := range []struct {
		block string
		want  []int
	}{{"m.py:7", []int{9}}, {"m.py:5", nil}} {
		sl = nil
		for _, s := range silentSites(sites, map[string]bool{"m.py:3": true}, map[string]bool{c.block: true}) {
			if s.Line != 7 {
				sl = append(sl, s.Line)
			}
		}
		if !slices.Equal(sl, c.want) {
			t.Errorf("block %s: silent lines = %v, want %v", c.block, sl, c.want)
		}
	}
}
