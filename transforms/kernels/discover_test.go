package kernels

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoveryFixture checks fixtures/kernels/_discovery/expected.json: every
// origin, lines, classes, and dedupe with the .cu fixtures next door.
func TestDiscoveryFixture(t *testing.T) {
	root := filepath.Join(repoRoot, "fixtures/kernels")
	b, err := os.ReadFile(filepath.Join(root, "_discovery/expected.json"))
	if err != nil {
		t.Fatalf("fixture missing: %v", err)
	}
	var exp struct {
		Kernels []struct {
			File, Origin, Name, Class string
			Line                      int
			Sources, Names            []string
			InventoryOnly             bool `json:"inventory_only"`
		}
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	files, err := ListFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	inv, probs := Discover(context.Background(), root, files)
	ids := map[string]bool{}
	for _, k := range inv.Kernels {
		if ids[k.ID] {
			t.Errorf("kernel %s listed twice", k.ID)
		}
		ids[k.ID] = true
	}
	find := func(p, name string) *Kernel {
		for _, k := range inv.Kernels {
			if k.Path == p && k.Name == name {
				return k
			}
		}
		return nil
	}
	for _, e := range exp.Kernels {
		file := path.Join("_discovery", e.File)
		if e.Name != "" {
			k := find(file, e.Name)
			if k == nil {
				t.Errorf("%s: %s not found", file, e.Name)
				continue
			}
			if k.Line != e.Line || k.Origin != e.Origin || k.Class != e.Class {
				t.Errorf("%s: line %d origin %s class %s, want %d %s %s", e.Name, k.Line, k.Origin, k.Class, e.Line, e.Origin, e.Class)
			}
			if e.InventoryOnly && (k.Unit != nil || k.SpecStatus != SpecNeedsSpec) {
				t.Errorf("%s: Triton kernel should be inventory only", e.Name)
			}
			if !e.InventoryOnly && k.Unit == nil {
				t.Errorf("%s: not isolated", e.Name)
			}
			continue
		}
		for i, src := range e.Sources {
			p := path.Join("_discovery", src)
			k := find(p, e.Names[i])
			if k == nil {
				t.Errorf("%s via %s not found", e.Names[i], file)
				continue
			}
			if k.Origin != e.Origin || len(k.ReferencedBy) == 0 || k.ReferencedBy[0] != file {
				t.Errorf("%s: origin %s referenced by %v, want %s from %s", k.Name, k.Origin, k.ReferencedBy, e.Origin, file)
			}
		}
	}
	// the inline kernel's spec is inferred from host code inside the string
	if k := find("_discovery/inline_relu.py", "scaled_relu_kernel"); k != nil && k.SpecStatus != SpecInferred {
		t.Errorf("load_inline kernel: %s (%s)", k.SpecStatus, k.Reason)
	}
	// the CuPy kernel's spec comes from the Python launch and, for y, from how
	// the kernel indexes it
	if k := find("_discovery/cupy_saxpy.py", "saxpy_kernel"); k == nil || k.SpecStatus != SpecInferred {
		t.Errorf("cupy kernel not inferred: %+v", k)
	} else {
		want := map[string]string{"a": "scalar:", "x": "input:n", "y": "input:n", "out": "output:n", "n": "size:"}
		for _, p := range k.Spec.Params {
			if got := p.Role + ":" + strings.Join(p.Shape, ","); got != want[p.Name] {
				t.Errorf("cupy %s = %s, want %s", p.Name, got, want[p.Name])
			}
		}
		if k.Spec.Launch.Grid[0] != "(n + 127) / 128" || k.Spec.Launch.Block[0] != "128" {
			t.Errorf("cupy launch %+v", k.Spec.Launch)
		}
	}
	codes := map[string]int{}
	for _, p := range probs {
		codes[p.Code]++
	}
	if codes[CodeFound] != len(inv.Kernels)-1 || codes[CodeInventory] != 1 {
		t.Errorf("problem codes %v for %d kernels", codes, len(inv.Kernels))
	}
}

func TestDiscoveryPythonForms(t *testing.T) {
	dir := t.TempDir()
	kern := func(name string) string {
		return `__global__ void ` + name + `(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }`
	}
	writeFile(t, filepath.Join(dir, "csrc/a.cu"), kern("from_open"))
	writeFile(t, filepath.Join(dir, "csrc/b.cu"), kern("from_path"))
	writeFile(t, filepath.Join(dir, "csrc/c.cu"), kern("from_ext"))
	writeFile(t, filepath.Join(dir, "pkg/ops.py"), `
import torch
from pathlib import Path
from torch.utils.cpp_extension import load_inline, load

HERE = Path(__file__).resolve().parent
SRC_A = open("csrc/a.cu").read()
SRC_B = (HERE / ".." / "csrc" / "b.cu").read_text()
lit = "__global__ void from_literal(float* y) { y[threadIdx.x] = 0.0f; }"
joined = ("__global__ void from_concat(float* y) "
          "{ y[threadIdx.x] = 2.0f; }")
m1 = load_inline(name="a", cpp_sources="", cuda_sources=[SRC_A, lit])
m2 = load_inline("b", "", SRC_B, extra_cuda_cflags=["--use_fast_math"])
m3 = load_inline(name="c", cpp_sources="", cuda_sources=joined)
m4 = load_inline(name="d", cpp_sources="", cuda_sources=f"{lit}")
m5 = load(name="e", sources=["../../outside.cu"])
`)
	writeFile(t, filepath.Join(dir, "setup.py"), `
from torch.utils.cpp_extension import CUDAExtension
SOURCES = ["csrc/c.cu", "csrc/host.cpp"]
ext = CUDAExtension("x", SOURCES)
`)
	writeFile(t, filepath.Join(dir, "cupy_mod.py"), `
import cupy
code = r'''
extern "C" __global__ void m1(float* x) { x[threadIdx.x] = 1.0f; }
extern "C" __global__ void m2(float* x) { x[threadIdx.x] = 2.0f; }
'''
mod = cupy.RawModule(code=code)
`)
	files, _ := ListFiles(dir)
	inv, probs := Discover(context.Background(), dir, files)
	got := map[string]*Kernel{}
	for _, k := range inv.Kernels {
		got[k.Name] = k
	}
	want := map[string]string{"from_open": OriginLoadInline, "from_literal": OriginLoadInline, "from_path": OriginLoadInline,
		"from_concat": OriginLoadInline, "from_ext": OriginCUDAExtension, "m1": OriginCuPy, "m2": OriginCuPy}
	for name, origin := range want {
		k := got[name]
		if k == nil {
			t.Errorf("%s not found", name)
			continue
		}
		if k.Origin != origin {
			t.Errorf("%s origin %s, want %s", name, k.Origin, origin)
		}
	}
	if k := got["from_path"]; k != nil && !k.FastMath {
		t.Errorf("--use_fast_math not recorded")
	}
	if k := got["from_open"]; k != nil && k.Path != "csrc/a.cu" {
		t.Errorf("file-read source path %s, want csrc/a.cu", k.Path)
	}
	if k := got["from_literal"]; k != nil && (k.Path != "pkg/ops.py" || k.Line != 9) {
		t.Errorf("literal source at %s:%d, want pkg/ops.py:9", k.Path, k.Line)
	}
	var unresolved []string
	for _, p := range probs {
		if p.Code == CodeUnresolved {
			unresolved = append(unresolved, p.Message)
		}
	}
	j := strings.Join(unresolved, "\n")
	if !strings.Contains(j, "f-strings") || !strings.Contains(j, "outside the repository") {
		t.Errorf("PKN006 problems:\n%s", j)
	}
}

func TestKernelIDStable(t *testing.T) {
	if got := KernelID("csrc/k.cu", "add"); got != KernelID("csrc/k.cu", "add") || len(got) != 12 || !strings.HasPrefix(got, "k-") {
		t.Fatalf("KernelID = %q", got)
	}
	// a known value pins the recipe: sha256("csrc/k.cu#add")[:10]
	if got := KernelID("csrc/k.cu", "add"); got != "k-46984403ca" {
		t.Errorf("KernelID recipe changed: %s, want k-46984403ca (ids must stay stable across releases)", got)
	}
	if KernelID("a.cu", "k") == KernelID("b.cu", "k") || KernelID("a.cu", "k") == KernelID("a.cu", "k2") {
		t.Errorf("ids collide")
	}
	dir := t.TempDir()
	body := `__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 0.0f; }
`
	writeFile(t, filepath.Join(dir, "src/k.cu"), body)
	inv1, _ := Discover(context.Background(), dir, []string{"src/k.cu"})
	writeFile(t, filepath.Join(dir, "src/k.cu"), "// a new comment\n#define UNRELATED 1\n__device__ int other() { return 1; }\n"+body)
	writeFile(t, filepath.Join(dir, "src/other.cu"), `__global__ void k(float* y) {}`)
	inv2, _ := Discover(context.Background(), dir, []string{"src/k.cu", "src/other.cu"})
	if len(inv1.Kernels) != 1 || len(inv2.Kernels) != 2 {
		t.Fatalf("kernels: %d, %d", len(inv1.Kernels), len(inv2.Kernels))
	}
	var after *Kernel
	for _, k := range inv2.Kernels {
		if k.Path == "src/k.cu" {
			after = k
		}
	}
	if after == nil || after.ID != inv1.Kernels[0].ID {
		t.Errorf("id changed after an unrelated edit")
	}
	if after.Line != 4 || inv1.Kernels[0].Line != 1 {
		t.Errorf("lines %d, %d", inv1.Kernels[0].Line, after.Line)
	}
}

// TestExplicitSpecialization: `template <> __global__ void k<at::Half>` in
// the .cu that includes the primary template is the at::Half body only; the
// primary runs every other instantiation (mmcv's bbox_overlaps_cuda_kernel).
func TestExplicitSpecialization(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src/k.cuh"), `template <typename T>
__global__ void scale_kernel(const T* x, T* y, const int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 2;
}
`)
	writeFile(t, filepath.Join(dir, "src/k.cu"), `#include "k.cuh"
template <>
__global__ void scale_kernel<at::Half>(const at::Half* x, at::Half* y, const int n) {}
`)
	inv, _ := Discover(context.Background(), dir, []string{"src/k.cu", "src/k.cuh"})
	var primary, spec *Kernel
	for _, k := range inv.Kernels {
		switch k.Path {
		case "src/k.cuh":
			primary = k
		case "src/k.cu":
			spec = k
		}
	}
	if primary == nil || spec == nil {
		t.Fatalf("kernels: %+v", inv.Kernels)
	}
	if !slices.Equal(spec.Specializes, []string{"at::Half"}) || len(primary.Specializes) != 0 {
		t.Fatalf("Specializes: primary %q, specialisation %q", primary.Specializes, spec.Specializes)
	}
	for _, c := range []struct {
		targs         []string
		primary, spec bool
	}{{[]string{"float"}, true, false}, {[]string{"c10::Half"}, false, true}, {[]string{"at::Half"}, false, true}} {
		if primary.RunsBody(c.targs) != c.primary || spec.RunsBody(c.targs) != c.spec {
			t.Errorf("%v: primary runs it %v, specialisation %v", c.targs, primary.RunsBody(c.targs), spec.RunsBody(c.targs))
		}
	}
	_, _, err := SpecFromLaunches(spec, []CapturedLaunch{{Kernel: "scale_kernel", TemplateArgs: []string{"float"}}})
	if err == nil || !strings.Contains(err.Error(), "explicit specialisation") || !strings.Contains(err.Error(), "<float>") {
		t.Errorf("specialisation given only float launches: %v", err)
	}
}
