package kernels

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A kernel whose launch static inference cannot read: the launcher takes raw
// pointers in another file, the grid comes from a helper and the dtype from a
// template chosen at run time.
var captureRepo = map[string]string{
	"csrc/kernel.cuh": `#pragma once
#define CUDA_1D_KERNEL_LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
template <typename T>
__global__ void scale_add_kernel(const int n, const T* x, const T* y, const T alpha, T* out) {
  CUDA_1D_KERNEL_LOOP(i, n) { out[i] = alpha * x[i] + y[i]; }
}
`,
	"csrc/launch.cu": `#include "kernel.cuh"
static int blocks(int n) { return (n + 255) / 256; }
void launch_scale_add(int n, const void* x, const void* y, double alpha, void* out, bool dbl) {
  if (dbl) scale_add_kernel<double><<<blocks(n), 256>>>(n, (const double*)x, (const double*)y, alpha, (double*)out);
  else scale_add_kernel<float><<<blocks(n), 256>>>(n, (const float*)x, (const float*)y, (float)alpha, (float*)out);
}
`,
}

func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeLaunch writes one scale_add launch (n elements of dtype) into dir the
// way the emulator records it and returns its launches.jsonl line.
func fakeLaunch(t *testing.T, dir string, seq, n int, dtype string, extent int) string {
	t.Helper()
	size := map[string]int{"float32": 4, "float64": 8}[dtype]
	ctype := map[string]string{"float32": "float", "float64": "double"}[dtype]
	buf := func(name string, f func(i int) float64) string {
		b := make([]byte, extent*size)
		for i := range extent {
			if size == 4 {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(f(i))))
			} else {
				binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(f(i)))
			}
		}
		file := fmt.Sprintf("%06d_%s.bin", seq, name)
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	x := buf("a1_before", func(i int) float64 { return float64(i) })
	y := buf("a2_before", func(i int) float64 { return 1 })
	outBefore := buf("a4_before", func(i int) float64 { return 0 })
	outAfter := buf("a4_after", func(i int) float64 { return 1.5*float64(i) + 1 })
	ptr := func(idx int, name string, read, written bool, before, after string) map[string]any {
		return map[string]any{"index": idx, "name": name, "kind": "pointer", "ctype": ctype + "*", "dtype": dtype,
			"alloc": map[string]any{"id": idx, "bytes": extent * size, "origin": "torch"}, "offset_bytes": 0,
			"extent_bytes": extent * size, "shape_hint": []int{2, extent / 2}, "read": read, "written": written, "read_known": true,
			"before": before, "after": after}
	}
	l := map[string]any{"schema": CaptureSchema, "seq": seq, "kernel": "scale_add_kernel",
		"instance": "scale_add_kernel<" + ctype + ">", "template_args": []string{ctype},
		"grid": []int{(n + 255) / 256, 1, 1}, "block": []int{256, 1, 1}, "shared_bytes": 0,
		"args": []any{
			// n is recorded as the engine records numel() passed to an int parameter.
			map[string]any{"index": 0, "name": "n", "kind": "scalar", "ctype": "long int", "dtype": "int64", "decl": "int", "value": n},
			ptr(1, "x", true, false, x, x), ptr(2, "y", true, false, y, y),
			map[string]any{"index": 3, "name": "alpha", "kind": "scalar", "ctype": ctype, "dtype": dtype, "value": 1.5},
			ptr(4, "out", false, true, outBefore, outAfter)},
		"roles_from": "access", "duration_s": 0.001}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func captureKernel(t *testing.T) *Kernel {
	t.Helper()
	root := writeRepo(t, captureRepo)
	inv, _ := Discover(context.Background(), root, nil)
	for _, k := range inv.Kernels {
		if k.Name == "scale_add_kernel" {
			return k
		}
	}
	t.Fatalf("scale_add_kernel not discovered: %+v", inv.Kernels)
	return nil
}

func writeCapture(t *testing.T, lines ...string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSpecFromLaunches(t *testing.T) {
	k := captureKernel(t)
	dir := t.TempDir()
	lines := []string{fakeLaunch(t, dir, 1, 300, "float32", 300), fakeLaunch(t, dir, 2, 1000, "float32", 1000),
		fakeLaunch(t, dir, 3, 500, "float32", 400)} // extent does not follow n: left out
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil || len(ls) != 3 {
		t.Fatalf("ReadLaunches = %d, %v", len(ls), err)
	}
	for i := range ls {
		ls[i].Entry = "tests/test_scale_add.py"
	}
	spec, cp, err := SpecFromLaunches(k, ls)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Launches != 3 || cp.Used != 2 || len(cp.Cases) != 2 {
		t.Errorf("capture: launches %d used %d cases %d, want 3 2 2", cp.Launches, cp.Used, len(cp.Cases))
	}
	if !reflect.DeepEqual(spec.Symbols, []string{"n"}) {
		t.Errorf("symbols = %v, want [n]", spec.Symbols)
	}
	type pr struct{ name, role, dtype, shape, expr string }
	var got []pr
	for _, p := range spec.Params {
		got = append(got, pr{p.Name, p.Role, p.DType, strings.Join(p.Shape, ","), p.Expr})
	}
	want := []pr{{"n", "size", "int32", "", "n"}, {"x", "input", "float32", "n", ""}, {"y", "input", "float32", "n", ""},
		{"alpha", "scalar", "float32", "", ""}, {"out", "output", "float32", "n", ""}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("params = %+v\nwant %+v", got, want)
	}
	if a := spec.Params[3]; a.Value == nil || *a.Value != 1.5 {
		t.Errorf("alpha value = %v, want 1.5 (captured)", a.Value)
	}
	if spec.Launch.Grid != [3]string{"(n + 255) / 256", "1", "1"} || spec.Launch.Block != [3]string{"256", "1", "1"} {
		t.Errorf("launch = %+v", spec.Launch)
	}
	var sweep []int64
	for _, a := range spec.Domain.Sweep {
		sweep = append(sweep, a["n"])
	}
	for _, n := range []int64{300, 1000, 299, 301, 999, 1001} {
		if !containsInt(sweep, n) {
			t.Errorf("sweep %v lacks n=%d (captured sizes and their neighbours)", sweep, n)
		}
	}
	c := cp.Cases[1]
	if c.Sizes["n"] != 1000 || c.Launch != [7]int64{4, 1, 1, 256, 1, 1, 0} {
		t.Errorf("case sizes %v launch %v", c.Sizes, c.Launch)
	}
	x, ok := c.Args["x"].(*CapturedBuffer)
	if !ok || len(x.Data) != 4000 || !reflect.DeepEqual(x.Shape, []int64{1000}) {
		t.Fatalf("case x = %+v", c.Args["x"])
	}
	if _, ok := c.Args["out"]; ok {
		t.Errorf("an output's before-buffer is passed as an input")
	}
	out := c.Expected["out"]
	if got := math.Float32frombits(binary.LittleEndian.Uint32(out.Data[4*10:])); got != 16 {
		t.Errorf("expected out[10] = %v, want 16 (the after-buffer)", got)
	}
	if c.Args["n"] != int64(1000) || c.Args["alpha"] != 1.5 {
		t.Errorf("scalars n=%v alpha=%v", c.Args["n"], c.Args["alpha"])
	}
	js, err := CapturedCasesJSON(k.ID, cp.Cases)
	if err != nil || !strings.Contains(string(js), `"schema":"pallasify.captured/v1"`) {
		t.Errorf("CapturedCasesJSON: %v %.80s", err, js)
	}
}

func containsInt(xs []int64, v int64) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// The captured instance's template arguments instantiate the isolated unit.
func TestUseCaptureReinstantiates(t *testing.T) {
	k := captureKernel(t)
	// capture the instance discovery did not pick
	dtype, ctype := "float64", "double"
	if strings.HasSuffix(k.Unit.Entry, "<double>") {
		dtype, ctype = "float32", "float"
	}
	dir := t.TempDir()
	line := fakeLaunch(t, dir, 1, 64, dtype, 64)
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(line), 0o644); err != nil {
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
	before := k.Unit.Hash
	k.UseCapture(spec, cp)
	if k.SpecStatus != SpecCaptured || k.Captured != cp || k.Spec != spec {
		t.Errorf("status %s", k.SpecStatus)
	}
	if !strings.Contains(k.Unit.Source, "scale_add_kernel<"+ctype+">(const int n, const "+ctype+"* x") || !strings.HasSuffix(k.Unit.Entry, "scale_add_kernel<"+ctype+">") {
		t.Errorf("unit not instantiated for %s: entry %s\n%s", ctype, k.Unit.Entry, k.Unit.Source)
	}
	if k.Unit.Hash == before || k.TemplateArgs["T"] != ctype {
		t.Errorf("hash unchanged or template args %v", k.TemplateArgs)
	}
	if spec.Params[1].DType != dtype {
		t.Errorf("x dtype %s", spec.Params[1].DType)
	}
}

func TestReadLaunchesRejectsOtherSchemas(t *testing.T) {
	dir := writeCapture(t, `{"schema":"other/v9","seq":1,"kernel":"k"}`)
	if _, err := ReadLaunches(dir); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("err = %v", err)
	}
	if ls, err := ReadLaunches(t.TempDir()); err != nil || ls != nil {
		t.Errorf("empty capture dir: %v %v", ls, err)
	}
}

func TestSpecFromLaunchesNotLaunched(t *testing.T) {
	k := captureKernel(t)
	_, cp, err := SpecFromLaunches(k, []CapturedLaunch{{Schema: CaptureSchema, Kernel: "other_kernel"}})
	if err == nil || cp.Launches != 0 || !strings.Contains(err.Error(), "not launched") {
		t.Errorf("err %v launches %d", err, cp.Launches)
	}
}

func TestCapturedRoles(t *testing.T) {
	for _, tc := range []struct {
		a    LaunchArg
		want string
	}{
		{LaunchArg{Read: true, ReadKnown: true}, "input"},
		{LaunchArg{Written: true, ReadKnown: true, Before: "b"}, "output"},
		{LaunchArg{Read: true, Written: true, ReadKnown: true}, "inout"},
		{LaunchArg{Written: true, Before: "b"}, "inout"}, // seen by diff only: reads unknown
		{LaunchArg{Role: "output", Written: true, Before: "b"}, "output"},
		{LaunchArg{Written: true, ReadKnown: true, Partial: true, Before: "b"}, "inout"}, // written in part
	} {
		if got := roleOf(tc.a); got != tc.want {
			t.Errorf("roleOf(%+v) = %s, want %s", tc.a, got, tc.want)
		}
	}
}

// A launch captured with one block (grid 1, n ≤ block) cannot tell a constant
// grid from ceil(n / block): the sweep stays within the one block, where both
// readings launch the same grid (sizes past it made the reference leave
// elements unwritten on KernelBench's elementwise add).
func TestSpecFromOneBlockLaunchStaysInTheBlock(t *testing.T) {
	k := captureKernel(t)
	dir := t.TempDir()
	line := fakeLaunch(t, dir, 0, 100, "float32", 100)
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err := SpecFromLaunches(k, ls)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(spec.Domain.Constraints, []string{"n <= 256"}) {
		t.Errorf("constraints = %v, want [n <= 256]", spec.Domain.Constraints)
	}
	if len(spec.Domain.Sweep) < 3 {
		t.Errorf("sweep %v: want the captured size and its neighbours", spec.Domain.Sweep)
	}
	for _, a := range spec.Domain.Sweep {
		if a["n"] > 256 {
			t.Errorf("sweep has n = %d past the captured one-block launch", a["n"])
		}
	}
}

// A test's first call of an op is often degenerate (empty tensors): the spec
// comes from the first launch that can carry one, not from launch 0 alone.
func TestSpecFromLaunchesSkipsAnEmptyFirstLaunch(t *testing.T) {
	k := captureKernel(t)
	dir := t.TempDir()
	lines := fakeLaunch(t, dir, 0, 0, "float32", 0) + "\n" + fakeLaunch(t, dir, 1, 1000, "float32", 1000) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, cp, err := SpecFromLaunches(k, ls)
	if err != nil {
		t.Fatalf("spec from an empty launch then a real one: %v", err)
	}
	if cp.Used < 1 || len(spec.Domain.Sweep) == 0 || spec.Domain.Sweep[0]["n"] != 1000 {
		t.Errorf("used %d launches, sweep %v: want the 1000-element launch", cp.Used, spec.Domain.Sweep)
	}
}

// Real code passes an empty tensor for an optional argument the kernel tests
// (`weight != NULL`) and keeps bit masks in unsigned long long: the capture
// gives the first a NULL input of shape [0], the second dtype uint64.
var nullMaskRepo = map[string]string{
	"csrc/ops.cu": `
__global__ void weighted_kernel(const int n, const float* input, const float* weight, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = weight != NULL ? input[i] * weight[i] : input[i];
}
__global__ void mask_kernel(const int n, const float* boxes, unsigned long long* mask) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) mask[i] = boxes[i] > 0 ? 1ULL << 40 : 0ULL;
}
void launch(int n, const float* in, const float* w, float* out, const float* b, unsigned long long* m) {
  weighted_kernel<<<(n + 127) / 128, 128>>>(n, in, w, out);
  mask_kernel<<<(n + 127) / 128, 128>>>(n, b, m);
}
`,
}

func TestSpecFromLaunchesNullAndUint64(t *testing.T) {
	root := writeRepo(t, nullMaskRepo)
	inv, _ := Discover(context.Background(), root, nil)
	byName := map[string]*Kernel{}
	for _, k := range inv.Kernels {
		byName[k.Name] = k
	}
	if byName["weighted_kernel"] == nil || byName["mask_kernel"] == nil {
		t.Fatalf("kernels not discovered: %+v", inv.Kernels)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	f32 := func(vals ...float32) []byte {
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	u64 := func(vals ...uint64) []byte {
		b := make([]byte, 8*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
		return b
	}
	ptr := func(idx int, name, dtype string, bytes int, role, before, after string) map[string]any {
		return map[string]any{"index": idx, "name": name, "kind": "pointer", "ctype": "float*", "dtype": dtype,
			"address": fmt.Sprintf("0x%x", 0x1000*(idx+1)), "alloc": map[string]any{"id": idx, "bytes": bytes, "origin": "torch"},
			"offset_bytes": 0, "extent_bytes": bytes, "read": role != "output", "written": role != "input", "read_known": true,
			"role": role, "before": before, "after": after}
	}
	in := write("1_in.bin", f32(1, -2, 3))
	out0, out1 := write("1_out0.bin", f32(0, 0, 0)), write("1_out1.bin", f32(1, -2, 3))
	weighted := map[string]any{"schema": CaptureSchema, "seq": 1, "kernel": "weighted_kernel", "instance": "weighted_kernel",
		"grid": []int{1, 1, 1}, "block": []int{128, 1, 1}, "shared_bytes": 0, "roles_from": "replay",
		"args": []any{
			map[string]any{"index": 0, "name": "n", "kind": "scalar", "ctype": "int", "dtype": "int32", "value": 3},
			ptr(1, "input", "float32", 12, "input", in, in),
			// an empty tensor's data_ptr(): NULL, in no allocation
			map[string]any{"index": 2, "name": "weight", "kind": "pointer", "ctype": "float*", "dtype": "float32",
				"address": "0x0", "alloc": nil, "origin": "unknown"},
			ptr(3, "out", "float32", 12, "output", out0, out1)}}
	boxes := write("2_boxes.bin", f32(1, -1, 2))
	m0, m1 := write("2_m0.bin", u64(7, 7, 7)), write("2_m1.bin", u64(1<<40, 0, 1<<40))
	mask := map[string]any{"schema": CaptureSchema, "seq": 2, "kernel": "mask_kernel", "instance": "mask_kernel",
		"grid": []int{1, 1, 1}, "block": []int{128, 1, 1}, "shared_bytes": 0, "roles_from": "replay",
		"args": []any{
			map[string]any{"index": 0, "name": "n", "kind": "scalar", "ctype": "int", "dtype": "int32", "value": 3},
			ptr(1, "boxes", "float32", 12, "input", boxes, boxes),
			ptr(2, "mask", "uint64", 24, "output", m0, m1)}}
	var lines []string
	for _, l := range []any{weighted, mask} {
		b, _ := json.Marshal(l)
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, cp, err := SpecFromLaunches(byName["weighted_kernel"], ls)
	if err != nil {
		t.Fatalf("weighted_kernel: %v", err)
	}
	w := spec.Params[2]
	if w.Name != "weight" || !w.Null || w.Role != "input" || w.DType != "float32" || !reflect.DeepEqual(w.Shape, []string{"0"}) {
		t.Errorf("weight = %+v, want a NULL float32 input of shape [0]", w)
	}
	if spec.Params[1].Null || spec.Params[3].Null || spec.Params[3].Role != "output" {
		t.Errorf("only weight is NULL: %+v", spec.Params)
	}
	if probs := ValidateSpec(spec, byName["weighted_kernel"]); len(probs) > 0 {
		t.Errorf("ValidateSpec: %v", probs)
	}
	if len(cp.Cases) != 1 {
		t.Fatalf("cases = %d, want 1", len(cp.Cases))
	}
	if b, ok := cp.Cases[0].Args["weight"].(*CapturedBuffer); !ok || len(b.Data) != 0 || !reflect.DeepEqual(b.Shape, []int64{0}) {
		t.Errorf("case weight = %+v, want an empty buffer", cp.Cases[0].Args["weight"])
	}
	js, err := CapturedCasesJSON("weighted", cp.Cases)
	if err != nil || !strings.Contains(string(js), `"weight":{"dtype":"float32","shape":[0],"data":""}`) {
		t.Errorf("captured cases JSON: %v %s", err, js)
	}
	spec, cp, err = SpecFromLaunches(byName["mask_kernel"], ls)
	if err != nil {
		t.Fatalf("mask_kernel: %v", err)
	}
	m := spec.Params[2]
	if m.DType != "uint64" || m.Role != "output" || !reflect.DeepEqual(m.Shape, []string{"n"}) {
		t.Errorf("mask = %+v, want a uint64 output of shape [n]", m)
	}
	if got := cp.Cases[0].Expected["mask"]; got.DType != "uint64" || binary.LittleEndian.Uint64(got.Data[0:]) != 1<<40 {
		t.Errorf("expected mask = %+v", got)
	}
	if probs := ValidateSpec(spec, byName["mask_kernel"]); len(probs) > 0 {
		t.Errorf("ValidateSpec: %v", probs)
	}
}

// A size the shapes do not show (nthreads = N × num_classes, passed as its
// own argument) changes between launches: the spec fixes it at the first
// launch's value, so only sizes captured with that value are swept and none
// around them (growing num_classes alone would leave outputs unwritten).
func TestSpecFromLaunchesHiddenSize(t *testing.T) {
	k := hiddenSizeKernel(t)
	ls := hiddenSizeLaunches(t, [][3]int{{4, 2, 2}, {9, 3, 3}, {6, 2, 3}}) // nthreads, N, num_classes
	spec, cp, err := SpecFromLaunches(k, ls)
	if err != nil {
		t.Fatal(err)
	}
	// the first two launches alone would tie the rows to num_classes; the
	// third shows them apart: the rows are a size of their own, nthreads
	// their product with num_classes
	if !reflect.DeepEqual(spec.Symbols, []string{"num_classes", "input_dim0"}) {
		t.Fatalf("symbols = %v, want [num_classes input_dim0]", spec.Symbols)
	}
	if p := spec.Params[0]; p.Role != "size" || p.Expr != "num_classes * input_dim0" {
		t.Errorf("nthreads = %+v, want the size num_classes * input_dim0", p)
	}
	if got := spec.Params[1].Shape; !reflect.DeepEqual(got, []string{"input_dim0", "num_classes"}) {
		t.Errorf("input shape = %v, want [input_dim0 num_classes]", got)
	}
	if cp.Used != 3 {
		t.Errorf("used %d launches as cases, want 3", cp.Used)
	}
	apart := false
	for _, a := range spec.Domain.Sweep {
		apart = apart || a["input_dim0"] != a["num_classes"]
	}
	if !apart || len(spec.Domain.Sweep) < 4 {
		t.Errorf("sweep = %v, want sizes with rows != num_classes around the captured ones", spec.Domain.Sweep)
	}
}

// Without the launch that shows them apart, nthreads is a size the spec
// fixes at the first launch's value (4): only sizes captured with it are
// swept.
func TestSpecFromLaunchesHiddenSizeFixed(t *testing.T) {
	k := hiddenSizeKernel(t)
	spec, cp, err := SpecFromLaunches(k, hiddenSizeLaunches(t, [][3]int{{4, 2, 2}, {9, 3, 3}}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(spec.Symbols, []string{"num_classes"}) {
		t.Fatalf("symbols = %v, want [num_classes]", spec.Symbols)
	}
	if want := []map[string]int64{{"num_classes": 2}}; !reflect.DeepEqual(spec.Domain.Sweep, want) {
		t.Errorf("sweep = %v, want %v (only sizes captured with nthreads=4)", spec.Domain.Sweep, want)
	}
	if p := spec.Params[0]; p.Role != "scalar" || p.Value == nil || *p.Value != 4 {
		t.Errorf("nthreads = %+v, want a scalar fixed at 4", p)
	}
	if cp.Used != 2 {
		t.Errorf("used %d launches as cases, want 2 (the launch with nthreads=9 fits the shapes)", cp.Used)
	}
}

// A hidden size that is a buffer's element count (nthreads = input.numel()
// for an input of shape [N, num_classes]) ties the symbol to it even when
// no launch varies it: growing num_classes with nthreads fixed would leave
// elements unwritten or read past the buffers, so nothing is swept around
// the captured size (mmcv's tin_shift: nthreads = n·t·c·hw, c swept alone).
func TestSpecFromLaunchesSizeTiedToAHiddenScalar(t *testing.T) {
	k := hiddenSizeKernel(t)
	spec, _, err := SpecFromLaunches(k, hiddenSizeLaunches(t, [][3]int{{4, 2, 2}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []map[string]int64{{"num_classes": 2}}; !reflect.DeepEqual(spec.Domain.Sweep, want) {
		t.Errorf("sweep = %v, want %v (nthreads = 4 is input's element count)", spec.Domain.Sweep, want)
	}
}

// hiddenSizeKernel is loss_kernel, launched with nthreads = n * c.
func hiddenSizeKernel(t *testing.T) *Kernel {
	t.Helper()
	root := writeRepo(t, map[string]string{"csrc/loss.cu": `
__global__ void loss_kernel(const int nthreads, const float* input, float* output, const int num_classes) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nthreads) output[i] = input[i] * (i % num_classes);
}
void launch(int n, int c, const float* in, float* out) { loss_kernel<<<1, 512>>>(n * c, in, out, c); }
`})
	inv, _ := Discover(context.Background(), root, nil)
	var k *Kernel
	for _, x := range inv.Kernels {
		if x.Name == "loss_kernel" {
			k = x
		}
	}
	if k == nil {
		t.Fatalf("loss_kernel not discovered")
	}
	return k
}

// hiddenSizeLaunches writes one launch of loss_kernel per case (nthreads,
// N, num_classes), input and output of shape [N, num_classes], and reads
// them back.
func hiddenSizeLaunches(t *testing.T, cs [][3]int) []CapturedLaunch {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for seq, c := range cs {
		n := c[0]
		file := fmt.Sprintf("%d.bin", seq)
		if err := os.WriteFile(filepath.Join(dir, file), make([]byte, 4*n), 0o644); err != nil {
			t.Fatal(err)
		}
		ptr := func(idx int, name, role string) map[string]any {
			return map[string]any{"index": idx, "name": name, "kind": "pointer", "ctype": "float*", "dtype": "float32",
				"address": fmt.Sprintf("0x%x", 0x1000*(idx+1)), "alloc": map[string]any{"id": idx, "bytes": 4 * n, "origin": "torch"},
				"extent_bytes": 4 * n, "shape_hint": []int{c[1], c[2]}, "read": role == "input", "written": role == "output",
				"read_known": true, "role": role, "before": file, "after": file}
		}
		l := map[string]any{"schema": CaptureSchema, "seq": seq, "kernel": "loss_kernel", "instance": "loss_kernel",
			"grid": []int{1, 1, 1}, "block": []int{512, 1, 1}, "shared_bytes": 0, "roles_from": "replay",
			"args": []any{
				map[string]any{"index": 0, "name": "nthreads", "kind": "scalar", "ctype": "int", "dtype": "int32", "value": n},
				ptr(1, "input", "input"), ptr(2, "output", "output"),
				map[string]any{"index": 3, "name": "num_classes", "kind": "scalar", "ctype": "int", "dtype": "int32", "value": c[2]}}}
		b, _ := json.Marshal(l)
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestCapturedIntRanges: an integer input's random data stays within the
// values the captured launches passed (an index drawn outside them makes
// the original read out of bounds); floats, outputs, NULL pointers and a
// range the spec has are left alone.
func TestCapturedIntRanges(t *testing.T) {
	i32 := func(vs ...int32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		}
		return b
	}
	i64 := func(vs ...int64) []byte {
		b := make([]byte, 8*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
		return b
	}
	spec := &Spec{Params: []Param{
		{Name: "idx", Kind: "pointer", DType: "int32", Role: "input"},
		{Name: "label", Kind: "pointer", DType: "int64", Role: "input"},
		{Name: "x", Kind: "pointer", DType: "float32", Role: "input"},
		{Name: "keep", Kind: "pointer", DType: "int32", Role: "input", IntRange: []int64{0, 2}},
		{Name: "out", Kind: "pointer", DType: "int32", Role: "output"},
	}}
	cases := []CapturedCase{
		{Args: map[string]any{"idx": &CapturedBuffer{DType: "int32", Data: i32(3, 0, 9)}, "label": &CapturedBuffer{DType: "int64", Data: i64(-1, 4)},
			"x": &CapturedBuffer{DType: "float32", Data: i32(100)}, "keep": &CapturedBuffer{DType: "int32", Data: i32(7)}}},
		{Args: map[string]any{"idx": &CapturedBuffer{DType: "int32", Data: i32(2, 5)}, "label": &CapturedBuffer{DType: "int64", Data: i64(2)}}},
	}
	capturedIntRanges(spec, cases)
	want := map[string][]int64{"idx": {0, 10}, "label": {-1, 5}, "x": nil, "keep": {0, 2}, "out": nil}
	for _, p := range spec.Params {
		if !reflect.DeepEqual(p.IntRange, want[p.Name]) {
			t.Errorf("%s: int_range %v, want %v", p.Name, p.IntRange, want[p.Name])
		}
	}
}

// A size several scalars equal at the first launch (nthreads = num_classes
// = 2) follows the one the other launches show (the target's 2 elements at
// 3 classes are nthreads), and a size no scalar equals follows the product
// of two (the scores' 4 = nthreads · num_classes, 6 and 9 later): both
// symbols, swept one at a time from the largest captured sizes up, since
// the integer target (a class index drawn from the captured labels) must
// stay below num_classes.
func TestSpecFromLaunchesTellsEqualSizesApart(t *testing.T) {
	k := rowsClassesKernel(t)
	spec, cp, err := SpecFromLaunches(k, rowsClassesLaunches(t, [][2]int{{2, 2}, {2, 3}, {3, 3}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"nthreads", "num_classes"}; !reflect.DeepEqual(spec.Symbols, want) {
		t.Fatalf("symbols = %v, want %v", spec.Symbols, want)
	}
	shapes := map[string][]string{}
	for _, p := range spec.Params {
		shapes[p.Name] = p.Shape
	}
	want := map[string][]string{"scores": {"nthreads * num_classes"}, "target": {"nthreads"}, "output": {"nthreads"},
		"nthreads": nil, "num_classes": nil}
	if !reflect.DeepEqual(shapes, want) {
		t.Errorf("shapes = %v, want %v", shapes, want)
	}
	if cp.Used != 3 {
		t.Errorf("used %d launches, want 3", cp.Used)
	}
	apart := false
	for _, a := range spec.Domain.Sweep {
		if a["nthreads"] < 3 || a["num_classes"] < 3 {
			t.Errorf("sweep entry %v below the largest captured sizes (3, 3)", a)
		}
		apart = apart || a["nthreads"] != a["num_classes"]
	}
	if !apart || len(spec.Domain.Sweep) < 3 {
		t.Errorf("sweep = %v, want sizes where nthreads and num_classes differ", spec.Domain.Sweep)
	}
}

// Launched at 2 rows of 2 classes only, nothing tells nthreads from
// num_classes: every size stays fixed.
func TestSpecFromLaunchesKeepsEqualSizesFixed(t *testing.T) {
	k := rowsClassesKernel(t)
	spec, _, err := SpecFromLaunches(k, rowsClassesLaunches(t, [][2]int{{2, 2}, {2, 2}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Symbols) != 0 {
		t.Errorf("symbols = %v, want none (nthreads = num_classes in every launch)", spec.Symbols)
	}
}

func TestFollowed(t *testing.T) {
	launch := func(a, b, n int64) CapturedLaunch {
		sc := func(v int64) LaunchArg {
			return LaunchArg{Kind: "scalar", DType: "int32", Value: json.RawMessage(fmt.Sprint(v))}
		}
		return CapturedLaunch{Args: []LaunchArg{sc(a), sc(b), sc(n)}}
	}
	size := func(l CapturedLaunch) (int64, bool) { return scalarInt(l.Args[2]) }
	cases := []struct {
		name   string
		first  CapturedLaunch
		others []CapturedLaunch
		v      int64
		want   []int
	}{
		{"equal scalars told apart", launch(2, 2, 2), []CapturedLaunch{launch(2, 3, 2)}, 2, []int{0}},
		{"equal scalars never apart", launch(2, 2, 2), []CapturedLaunch{launch(3, 3, 3)}, 2, nil},
		{"product shown", launch(2, 2, 4), []CapturedLaunch{launch(2, 3, 6)}, 4, []int{0, 1}},
		{"one product never varied", launch(2, 3, 6), []CapturedLaunch{launch(2, 3, 6)}, 6, nil},
		{"no launch follows", launch(2, 2, 2), []CapturedLaunch{launch(2, 3, 5)}, 2, nil},
		{"no other launch", launch(2, 2, 2), nil, 2, nil},
	}
	for _, c := range cases {
		if got := followed(c.first, c.others, []int{0, 1}, c.v, size); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: followed = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestShownApartAndAroundEach(t *testing.T) {
	same := []map[string]int64{{"a": 8, "b": 128}, {"a": 8, "b": 128}}
	if shownApart(same, []string{"a", "b"}) {
		t.Errorf("launches that never vary a show it apart")
	}
	tied := []map[string]int64{{"a": 2, "b": 2}, {"a": 3, "b": 3}}
	if shownApart(tied, []string{"a", "b"}) {
		t.Errorf("a = b in every launch shows them apart")
	}
	apart := []map[string]int64{{"a": 2, "b": 2}, {"a": 2, "b": 3}, {"a": 3, "b": 3}}
	if !shownApart(apart, []string{"a", "b"}) {
		t.Errorf("a and b vary apart, not shown")
	}
	up := aroundEach(apart, []string{"a", "b"}, true)
	if want := []map[string]int64{{"a": 3, "b": 3}, {"a": 5, "b": 3}, {"a": 4, "b": 3}, {"a": 7, "b": 3}, {"a": 3, "b": 4}, {"a": 3, "b": 7}}; !reflect.DeepEqual(up, want) {
		t.Errorf("aroundEach upward = %v, want %v", up, want)
	}
	all := aroundEach(apart[:1], []string{"a", "b"}, false)
	if want := []map[string]int64{{"a": 2, "b": 2}, {"a": 3, "b": 2}, {"a": 5, "b": 2}, {"a": 1, "b": 2}, {"a": 2, "b": 3}, {"a": 2, "b": 5}, {"a": 2, "b": 1}}; !reflect.DeepEqual(all, want) {
		t.Errorf("aroundEach = %v, want %v", all, want)
	}
}

// rowsClassesKernel is mmcv's softmax focal loss forward in small: one
// thread per row, a class index per row into scores of rows × classes.
func rowsClassesKernel(t *testing.T) *Kernel {
	t.Helper()
	root := writeRepo(t, map[string]string{"csrc/loss.cu": `
__global__ void pick_kernel(const int nthreads, const float* scores, const long* target, float* output, const int num_classes) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nthreads) output[i] = scores[i * num_classes + target[i]];
}
void launch(int n, int c, const float* s, const long* t, float* out) { pick_kernel<<<1, 512>>>(n, s, t, out, c); }
`})
	inv, _ := Discover(context.Background(), root, nil)
	for _, x := range inv.Kernels {
		if x.Name == "pick_kernel" {
			return x
		}
	}
	t.Fatalf("pick_kernel not discovered")
	return nil
}

// rowsClassesLaunches writes one launch of pick_kernel per (rows, classes),
// its buffers 1-D (no shape hints), the labels i % classes.
func rowsClassesLaunches(t *testing.T, cs [][2]int) []CapturedLaunch {
	return classLaunches(t, "pick_kernel", false, cs)
}

// classLaunches writes launches of kernel per (rows, classes); perElement:
// one thread per score (nthreads = rows · classes, an output per score, as
// mmcv's sigmoid focal loss), else one per row.
func classLaunches(t *testing.T, kernel string, perElement bool, cs [][2]int) []CapturedLaunch {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for seq, c := range cs {
		rows, classes := c[0], c[1]
		write := func(name string, b []byte) string {
			file := fmt.Sprintf("%d_%s.bin", seq, name)
			if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
				t.Fatal(err)
			}
			return file
		}
		labels := make([]byte, 8*rows)
		for i := range rows {
			binary.LittleEndian.PutUint64(labels[8*i:], uint64(i%classes))
		}
		ptr := func(idx int, name, ctype, dtype, role string, b []byte) map[string]any {
			f := write(name, b)
			return map[string]any{"index": idx, "name": name, "kind": "pointer", "ctype": ctype, "dtype": dtype,
				"address": fmt.Sprintf("0x%x", 0x1000*(idx+1)), "alloc": map[string]any{"id": idx, "bytes": len(b), "origin": "torch"},
				"extent_bytes": len(b), "read": role == "input", "written": role == "output", "read_known": true,
				"role": role, "before": f, "after": f}
		}
		nthreads, outs := rows, rows
		if perElement {
			nthreads, outs = rows*classes, rows*classes
		}
		l := map[string]any{"schema": CaptureSchema, "seq": seq, "kernel": kernel, "instance": kernel,
			"grid": []int{1, 1, 1}, "block": []int{512, 1, 1}, "shared_bytes": 0, "roles_from": "replay",
			"args": []any{
				map[string]any{"index": 0, "name": "nthreads", "kind": "scalar", "ctype": "int", "dtype": "int32", "value": nthreads},
				ptr(1, "scores", "float*", "float32", "input", make([]byte, 4*rows*classes)),
				ptr(2, "target", "long*", "int64", "input", labels),
				ptr(3, "output", "float*", "float32", "output", make([]byte, 4*outs)),
				map[string]any{"index": 4, "name": "num_classes", "kind": "scalar", "ctype": "int", "dtype": "int32", "value": classes}}}
		b, _ := json.Marshal(l)
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// Buffers captured 1-D (no shape hints): the target's 2 labels equal
// num_classes = 2 at the first launch, 2 at 3 classes, so its length is a
// size of its own (target_size). nthreads stays the scores' count, which
// is target_size · num_classes in every launch: sweeping one alone would
// read labels past the target, so the sweep is the captured sizes only.
func TestSpecFromLaunchesSplitsACoincidentSize(t *testing.T) {
	root := writeRepo(t, map[string]string{"csrc/loss.cu": `
__global__ void flag_kernel(const int nthreads, const float* scores, const long* target, float* output, const int num_classes) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nthreads) output[i] = scores[i] * (target[i / num_classes] == i % num_classes);
}
void launch(int n, int c, const float* s, const long* t, float* out) { flag_kernel<<<1, 512>>>(n * c, s, t, out, c); }
`})
	inv, _ := Discover(context.Background(), root, nil)
	var k *Kernel
	for _, x := range inv.Kernels {
		if x.Name == "flag_kernel" {
			k = x
		}
	}
	if k == nil {
		t.Fatal("flag_kernel not discovered")
	}
	spec, cp, err := SpecFromLaunches(k, classLaunches(t, "flag_kernel", true, [][2]int{{2, 2}, {2, 3}, {3, 3}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"nthreads", "num_classes", "target_size"}; !reflect.DeepEqual(spec.Symbols, want) {
		t.Fatalf("symbols = %v, want %v", spec.Symbols, want)
	}
	if got := spec.Params[2].Shape; !reflect.DeepEqual(got, []string{"target_size"}) {
		t.Errorf("target shape = %v, want [target_size]", got)
	}
	want := []map[string]int64{{"nthreads": 4, "num_classes": 2, "target_size": 2},
		{"nthreads": 6, "num_classes": 3, "target_size": 2}, {"nthreads": 9, "num_classes": 3, "target_size": 3}}
	if cp.Used != 3 || !reflect.DeepEqual(spec.Domain.Sweep, want) {
		t.Errorf("used %d, sweep = %v, want 3 and %v", cp.Used, spec.Domain.Sweep, want)
	}
}
