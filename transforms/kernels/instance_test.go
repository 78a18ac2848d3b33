package kernels

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// capturedDouble is scale_add_kernel with its spec and cases from one
// float64 launch, before UseCapture.
func capturedDouble(t *testing.T) (*Kernel, *Spec, *Capture) {
	t.Helper()
	k := captureKernel(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(fakeLaunch(t, dir, 1, 64, "float64", 64)), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, cp, err := SpecFromLaunches(k, ls)
	if err != nil {
		t.Fatal(err)
	}
	return k, spec, cp
}

// TestFloat32Instance: a template whose tests launch it at double only
// becomes its float32 instantiation when its spec is captured: the unit at
// float, every float64 parameter of the template's type float32, the
// captured buffers rounded to float32, and the spec saying which dtype the
// tests launched.
func TestFloat32Instance(t *testing.T) {
	k, spec, cp := capturedDouble(t)
	k.UseCapture(spec, cp)
	if !strings.Contains(k.Unit.Source, "scale_add_kernel<float>(const int n, const float* x") || !strings.HasSuffix(k.Unit.Entry, "scale_add_kernel<float>") {
		t.Errorf("unit not the float instance: entry %s\n%s", k.Unit.Entry, k.Unit.Source)
	}
	if k.TemplateArgs["T"] != "float" || spec.TemplateArgs["T"] != "float" {
		t.Errorf("template args %v, spec %v", k.TemplateArgs, spec.TemplateArgs)
	}
	for _, p := range spec.Params {
		want := map[string]string{"n": "int32", "x": "float32", "y": "float32", "alpha": "float32", "out": "float32"}[p.Name]
		if p.DType != want || strings.Contains(p.CType, "double") {
			t.Errorf("%s: dtype %s ctype %q, want %s", p.Name, p.DType, p.CType, want)
		}
	}
	if spec.LaunchedDType != "float64" || !strings.Contains(spec.Note, "validated at float32 (scale_add_kernel<float>") {
		t.Errorf("launched %q, note %q", spec.LaunchedDType, spec.Note)
	}
	c := cp.Cases[0]
	x := c.Args["x"].(*CapturedBuffer)
	out := c.Expected["out"]
	if x.DType != "float32" || len(x.Data) != 64*4 || out.DType != "float32" || len(out.Data) != 64*4 {
		t.Fatalf("buffers not float32: x %s %d bytes, out %s %d bytes", x.DType, len(x.Data), out.DType, len(out.Data))
	}
	for i := range 64 {
		if got, want := math.Float32frombits(binary.LittleEndian.Uint32(out.Data[4*i:])), float32(1.5*float64(i)+1); got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
	if !strings.HasSuffix(c.Label, "float64 buffers rounded to float32") {
		t.Errorf("label %q", c.Label)
	}
	if Float32Instance(k) {
		t.Error("a float32 instance made again")
	}
}

// TestFloat32InstanceNeedsTheTemplatesType: a float64 parameter the kernel
// declares double itself (not the template parameter) keeps the kernel at
// float64, as does a kernel without template arguments.
func TestFloat32InstanceNeedsTheTemplatesType(t *testing.T) {
	k, spec, cp := capturedDouble(t)
	k.sig[1].base = "double" // x declared `const double*`
	k.UseCapture(spec, cp)
	if spec.LaunchedDType != "" || spec.Params[1].DType != "float64" || spec.Params[4].DType != "float64" ||
		!strings.Contains(k.Unit.Source, "scale_add_kernel<double>") {
		t.Errorf("converted a declared double: launched %q, x %s, out %s", spec.LaunchedDType, spec.Params[1].DType, spec.Params[4].DType)
	}
	if cp.Cases[0].Expected["out"].DType != "float64" {
		t.Error("captured buffers rounded")
	}
	k2, spec2, _ := capturedDouble(t)
	spec2.TemplateArgs = nil
	k2.Spec = spec2
	if Float32Instance(k2) || spec2.Params[1].DType != "float64" {
		t.Error("converted a spec without template arguments")
	}
}

// halfSpecRepo is captureRepo with scale_add_kernel's at::Half
// specialisation, which no launch runs.
func halfSpecRepo() map[string]string {
	files := map[string]string{"csrc/half.cu": `#include "kernel.cuh"
template <>
__global__ void scale_add_kernel<at::Half>(const int n, const at::Half* x, const at::Half* y, const at::Half alpha,
                                           at::Half* out) {
  CUDA_1D_KERNEL_LOOP(i, n) { out[i] = __hadd(__hmul(alpha, x[i]), y[i]); }
}
`}
	for p, s := range captureRepo {
		files[p] = s
	}
	return files
}

// TestHalfInstance: a float16 specialisation no test launched takes its
// primary template's float32 launches: the same shapes and scalars, its
// half pointers float16, the captured buffers rounded to float16, the spec
// saying the tests launched float32 and what was validated.
func TestHalfInstance(t *testing.T) {
	inv, _ := Discover(context.Background(), writeRepo(t, halfSpecRepo()), nil)
	var k *Kernel
	for _, c := range inv.Kernels {
		if len(c.Specializes) > 0 {
			k = c
		}
	}
	if k == nil {
		t.Fatalf("no specialisation discovered: %+v", inv.Kernels)
	}
	// its unit: the primary template first (a specialisation compiles only
	// after it), the specialisation as the entry, no instantiation
	if !strings.Contains(k.Unit.Source, "template <typename T>\n__global__ void scale_add_kernel(") ||
		k.Unit.Entry != "scale_add_kernel<at::Half>" || strings.Contains(k.Unit.Source, "scale_add_kernel<>") {
		t.Errorf("unit entry %s:\n%s", k.Unit.Entry, k.Unit.Source)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(fakeLaunch(t, dir, 1, 64, "float32", 64)), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, cp, err := SpecFromLaunches(k, ls)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range spec.Params {
		if p.Kind == "pointer" && (p.DType != "float16" || !strings.Contains(p.CType, "at::Half")) {
			t.Errorf("%s: dtype %s ctype %q, want float16 at::Half", p.Name, p.DType, p.CType)
		}
	}
	if spec.LaunchedDType != "float32" || spec.ValidatedDType != "float16" ||
		!strings.Contains(spec.Note, "validated at float16 (scale_add_kernel<at::Half>") || spec.TemplateArgs["T"] != "at::Half" {
		t.Errorf("launched %q validated %q targs %v, note %q", spec.LaunchedDType, spec.ValidatedDType, spec.TemplateArgs, spec.Note)
	}
	if cp.Launches != 0 || cp.Used != 1 {
		t.Fatalf("launches %d used %d", cp.Launches, cp.Used)
	}
	c := cp.Cases[0]
	out := c.Expected["out"]
	if out.DType != "float16" || len(out.Data) != 64*2 || !strings.HasSuffix(c.Label, "float32 buffers rounded to float16") {
		t.Fatalf("out %s %d bytes, label %q", out.DType, len(out.Data), c.Label)
	}
	if got := binary.LittleEndian.Uint16(out.Data[2*3:]); got != float16Bits(5.5) || got != 0x4580 {
		t.Errorf("out[3] bits %#x, want 0x4580 (5.5)", got)
	}
	_, _, err = SpecFromLaunches(k, []CapturedLaunch{{Kernel: "scale_add_kernel", TemplateArgs: []string{"double"}}})
	if err == nil || !strings.Contains(err.Error(), "explicit specialisation") {
		t.Errorf("a half specialisation given only double launches: %v", err)
	}
}

// TestFloat16Bits: float32 to IEEE half rounds to nearest even, overflows
// to inf past 65504's rounding range, keeps subnormals and quiets NaN.
func TestFloat16Bits(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {float32(math.Ldexp(1, -24)), 0x0001}, {float32(math.Ldexp(1, -25)), 0},
		{float32(math.Ldexp(1.5, -25)), 0x0001}, {float32(math.Ldexp(3, -25)), 0x0002}, // ties to even
		{1 + float32(math.Ldexp(1, -11)), 0x3c00}, {1 + float32(math.Ldexp(3, -11)), 0x3c02},
		{float32(math.Ldexp(1, -14)), 0x0400}, {float32(math.Ldexp(1023, -24)), 0x03ff},
		{float32(math.Copysign(0, -1)), 0x8000}, {math.Float32frombits(0x7fc00000), 0x7e00},
	} {
		if got := float16Bits(c.f); got != c.want {
			t.Errorf("float16Bits(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}
