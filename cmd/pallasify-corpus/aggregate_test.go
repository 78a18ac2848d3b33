package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Canned reports in the shape `pallasify analyze|migrate --format json`
// prints: today's keys only (old; the first kernel as the report prints it
// before any build ran: built_cpu false, captured 0, no build_reason) and
// with the capture stage's keys (new).

const oldAnalyze = `{"kind":"analyze","kernels":[
 {"id":"k-aaaaaa0001","name":"add","path":"a.py","line":3,"origin":"load_inline","class":"elementwise","spec_status":"inferred","emulator_status":"compiled","drafter":"-","verdict":"-","built_cpu":false,"captured":0},
 {"id":"k-aaaaaa0002","name":"pool","path":"b.py","line":7,"origin":"load_inline","class":"elementwise","spec_status":"needs-spec","emulator_status":"compiled","drafter":"-","verdict":"-"},
 {"id":"k-aaaaaa0003","name":"tadd","path":"t.py","line":9,"origin":"triton","class":"elementwise","spec_status":"needs-spec","emulator_status":"unsupported: triton (inventory only)","drafter":"-","verdict":"-"}],
 "kernel_notes":[
 {"code":"PKN002","path":"b.py","line":7,"message":"kernel pool needs a spec: size 0 of bottom_data is unknown; write .pallasify/kernels/k-aaaaaa0002.yaml"},
 {"code":"PKN007","path":"t.py","line":9,"message":"Triton kernel tadd listed (inventory only: Triton kernels are not emulated)"}]}`

const oldMigrate = `{"kind":"migrate","kernels":[
 {"id":"k-aaaaaa0001","name":"add","path":"a.py","line":3,"origin":"load_inline","spec_status":"inferred","emulator_status":"not-run","drafter":"rules","verdict":"proven"},
 {"id":"k-aaaaaa0002","name":"pool","path":"b.py","line":7,"origin":"load_inline","spec_status":"needs-spec","emulator_status":"not-run","drafter":"none","verdict":"needs-spec","reason":"no KernelSpec (size 0 of bottom_data is unknown): write .pallasify/kernels/k-aaaaaa0002.yaml"},
 {"id":"k-aaaaaa0003","name":"tadd","path":"t.py","line":9,"origin":"triton","spec_status":"needs-spec","emulator_status":"unsupported: triton (inventory only)","drafter":"none","verdict":"not-drafted","reason":"Triton kernels are listed only (inventory)"}],
 "kernel_notes":[
 {"code":"PKN002","path":"b.py","line":7,"message":"kernel pool needs a spec: size 0 of bottom_data is unknown; write .pallasify/kernels/k-aaaaaa0002.yaml"},
 {"code":"PDR004","path":"a.py","message":"kernel k-aaaaaa0001 is proven but not wired in: no Python call of add_cuda found"},
 {"code":"PKN007","path":"t.py","line":9,"message":"Triton kernel tadd listed (inventory only: Triton kernels are not emulated)"}]}`

// The new keys: one kernel per blocking point.
const newAnalyze = `{"kind":"analyze","kernels":[
 {"id":"k-bbbbbb0001","path":"w.py","line":1,"origin":"load","built_cpu":true,"captured":4,"spec_source":"tests","emulated":true},
 {"id":"k-bbbbbb0002","path":"x.cu","line":2,"origin":"cu-file","built_cpu":false,"build_reason":{"code":"EMU-UNSUPPORTED","text":"cuBLAS call cublasSgemm_v2 is not emulated"},"captured":0,"spec_source":"none","emulated":false},
 {"id":"k-bbbbbb0003","path":"y.cu","line":3,"origin":"cu-file","built_cpu":false,"build_reason":"EMU-BUILD: g++ failed on y.cu","captured":0,"spec_source":"none","emulated":false},
 {"id":"k-bbbbbb0004","path":"z.cu","line":4,"origin":"cu-file","built_cpu":true,"captured":2,"spec_source":"static","emulated":false},
 {"id":"k-bbbbbb0005","path":"v.cu","line":5,"origin":"cu-file","built_cpu":true,"captured":1,"spec_source":"call-sites+user-spec","emulated":true},
 {"id":"k-bbbbbb0006","path":"u.cu","line":6,"origin":"cu-file","built_cpu":true,"captured":3,"spec_source":"tests","emulated":true}],
 "kernel_notes":[]}`

const newMigrate = `{"kind":"migrate","kernels":[
 {"id":"k-bbbbbb0001","path":"w.py","line":1,"origin":"load","drafter":"rules","verdict":"proven","module":"_pallas_w.py","tpu_compiled":{"v5e":true,"v6e":true}},
 {"id":"k-bbbbbb0002","path":"x.cu","line":2,"origin":"cu-file","drafter":"none","verdict":"needs-spec","reason":"no KernelSpec (nothing in the host code gives the shape of A): write .pallasify/kernels/k-bbbbbb0002.yaml"},
 {"id":"k-bbbbbb0003","path":"y.cu","line":3,"origin":"cu-file","drafter":"none","verdict":"needs-spec","reason":"no KernelSpec (x): write y"},
 {"id":"k-bbbbbb0004","path":"z.cu","line":4,"origin":"cu-file","drafter":"none","verdict":"needs-llm","emulated":true,
  "reason":"rules: PPL001: class matmul-tile has no rule template — configure an LLM drafter (--llm-base-url/--llm-model) to draft it"},
 {"id":"k-bbbbbb0005","path":"v.cu","line":5,"origin":"cu-file","drafter":"rules","verdict":"rejected","reason":"V-MISMATCH: 12 of 4096 elements differ at n=257 (first at [3])","drafted":true,"proven":false,"wired":false},
 {"id":"k-bbbbbb0006","path":"u.cu","line":6,"origin":"cu-file","drafter":"rules","verdict":"proven","module":"","tpu_compiled":{"v5e":true,"tpu7x":false}}],
 "kernel_notes":[]}`

func mustFolder(t *testing.T, name, a, m string) Folder {
	t.Helper()
	var ab, mb []byte
	if a != "" {
		ab = []byte(a)
	}
	if m != "" {
		mb = []byte(m)
	}
	f := folderFromReports(name, ab, mb)
	if len(f.Errors) > 0 {
		t.Fatalf("%s: %v", name, f.Errors)
	}
	return f
}

func byID(t *testing.T, f Folder, id string) Kernel {
	t.Helper()
	for _, k := range f.Kernels {
		if k.ID == id {
			return k
		}
	}
	t.Fatalf("%s: no kernel %s", f.Name, id)
	return Kernel{}
}

func TestOldKeysAreUnknownNotFalse(t *testing.T) {
	f := mustFolder(t, "old", oldAnalyze, oldMigrate)
	cuda, triton, all := f.Rows[0], f.Rows[1], f.Rows[2]
	if cuda.Found != 2 || triton.Found != 1 || all.Found != 3 {
		t.Fatalf("found: cuda %d triton %d all %d, want 2 1 3", cuda.Found, triton.Found, all.Found)
	}
	for name, c := range map[string]Count{"built": all.Built, "captured": all.Captured, "emulated": all.Emulated, "tpu": all.TPU} {
		if c.Known != 0 {
			t.Errorf("%s: known %d, want 0 (the key is absent)", name, c.Known)
		}
	}
	if all.SpecKnwn != 0 {
		t.Errorf("spec: %d known, want 0", all.SpecKnwn)
	}
	if cuda.Drafted != (Count{1, 2}) || cuda.Proven != (Count{1, 2}) || cuda.Wired != (Count{0, 2}) {
		t.Errorf("cuda drafted/proven/wired = %v %v %v, want {1 2} {1 2} {0 2}", cuda.Drafted, cuda.Proven, cuda.Wired)
	}
	want := map[string]string{
		"k-aaaaaa0001": "PDR004 not wired: no Python call of … found",
		"k-aaaaaa0002": "PKN002 needs-spec: a tensor size is unknown",
		"k-aaaaaa0003": "PKN007 triton: inventory only",
	}
	for id, block := range want {
		if got := byID(t, f, id).Block; got != block {
			t.Errorf("%s block = %q, want %q", id, got, block)
		}
	}
	var buf bytes.Buffer
	writeTable(&buf, f.Rows)
	table := buf.String()
	for _, line := range []string{
		"| CUDA | 2 | - | - | - | - | 1 | 1 | - | 0 |",
		"| Triton | 1 | - | - | - | - | 0 | 0 | - | 0 |",
		"| all | 3 | - | - | - | - | 1 | 1 | - | 0 |",
	} {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("table lacks %q:\n%s", line, table)
		}
	}
}

func TestNewKeysAndBlockingPoints(t *testing.T) {
	f := mustFolder(t, "new", newAnalyze, newMigrate)
	all := f.Rows[2]
	if all.Found != 6 || all.Built != (Count{4, 6}) || all.Captured != (Count{4, 6}) {
		t.Errorf("found %d built %v captured %v, want 6 {4 6} {4 6}", all.Found, all.Built, all.Captured)
	}
	if all.Emulated != (Count{4, 6}) { // k4: false in analyze, true in migrate
		t.Errorf("emulated %v, want {4 6}", all.Emulated)
	}
	if all.Spec["tests"] != 2 || all.Spec["static"] != 1 || all.Spec["call-sites+user-spec"] != 1 || all.Spec["none"] != 2 {
		t.Errorf("spec sources %v", all.Spec)
	}
	if all.Drafted != (Count{3, 6}) || all.Proven != (Count{2, 6}) || all.TPU != (Count{1, 2}) || all.Wired != (Count{1, 6}) {
		t.Errorf("drafted %v proven %v tpu %v wired %v, want {3 6} {2 6} {1 2} {1 6}", all.Drafted, all.Proven, all.TPU, all.Wired)
	}
	want := map[string]string{
		"k-bbbbbb0001": "",
		"k-bbbbbb0002": "EMU-UNSUPPORTED build for CPU: cuBLAS call … is not emulated",
		"k-bbbbbb0003": "EMU-BUILD build for CPU: g++ failed on …",
		"k-bbbbbb0004": "PPL001: class matmul-tile has no rule template (needs-llm)",
		"k-bbbbbb0005": "V-MISMATCH: N of N elements differ at n=N (first at [N])",
		"k-bbbbbb0006": "TPU compile gate failed: tpu7x",
	}
	for id, block := range want {
		if got := byID(t, f, id).Block; got != block {
			t.Errorf("%s block = %q, want %q", id, got, block)
		}
	}
	var buf bytes.Buffer
	writeTable(&buf, f.Rows)
	if line := "| all | 6 | 4 | 4 | 2 / 1 / 1 / 2 | 4 | 3 | 2 | 1 (of 2) | 1 |\n"; !strings.Contains(buf.String(), line) {
		t.Errorf("table lacks %q:\n%s", line, buf.String())
	}
}

func TestMissingMigrateAndTotals(t *testing.T) {
	f := mustFolder(t, "analyze-only", oldAnalyze, "")
	for _, k := range f.Kernels {
		if k.Drafted != Unknown || k.Block != "migrate: kernel stages did not run" {
			t.Errorf("%s: drafted %v block %q", k.ID, k.Drafted, k.Block)
		}
	}
	agg := &Aggregate{Date: "d", Corpus: "c", Target: "tpu", Parallel: 2,
		Folders: []Folder{mustFolder(t, "old", oldAnalyze, oldMigrate), mustFolder(t, "new", newAnalyze, newMigrate)}}
	summarizeTotal(agg)
	if n := len(agg.Total); n != 7 { // two rows per folder, then cuda, triton, all
		t.Fatalf("%d total rows, want 7", n)
	}
	if tot := agg.Total[6]; tot.Label != "total all" || tot.Found != 9 || tot.Proven != (Count{3, 9}) || tot.Built != (Count{4, 6}) {
		t.Errorf("total row %+v", tot)
	}
	if tr := agg.Total[5]; tr.Label != "total Triton" || tr.Found != 1 {
		t.Errorf("triton total row %+v", tr)
	}
	var buf bytes.Buffer
	writeAggregate(&buf, agg)
	out := buf.String()
	for _, s := range []string{"### old", "### new", "### total", "| new · Triton | 0 |", "| total Triton | 1 |",
		"| PKN007 triton: inventory only | 1 |", "timing: 2 folders, 9 kernels"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	b, err := jsonAggregate(agg)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Folders []struct {
			Kernels []map[string]any `json:"kernels"`
		} `json:"folders"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Folders[0].Kernels[0]["built_cpu"]; got != nil {
		t.Errorf("unknown built_cpu written as %v, want null", got)
	}
}

func TestTopReasons(t *testing.T) {
	var ks []Kernel
	for i := range 12 {
		for range i + 1 {
			ks = append(ks, Kernel{Block: fmt.Sprintf("R%02d", i)})
		}
	}
	ks = append(ks, Kernel{}) // wired: no block
	rs := topReasons(ks, TopN)
	if len(rs) != TopN || rs[0] != (Reason{"R11", 12}) || rs[9] != (Reason{"R02", 3}) {
		t.Errorf("top reasons %v", rs)
	}
	tie := topReasons([]Kernel{{Block: "b"}, {Block: "a"}}, TopN)
	if tie[0].Block != "a" {
		t.Errorf("ties not by name: %v", tie)
	}
}

func TestSpecClass(t *testing.T) {
	cases := map[string]string{
		`kernel k needs a spec: argument 2 (K): nothing in the host code gives the shape of K; write .pallasify/kernels/k-1.yaml`: "nothing in the host code gives a pointer's shape",
		`kernel k needs a spec: grid "num_blocks": cannot evaluate "block_size.x"; write x`:                                       "grid: cannot evaluate an expression",
		`no KernelSpec (parameter add_globals has type __grid_constant__, which has no dtype): write .pallasify/kernels/k.yaml`:   "parameter type has no dtype",
		`kernel k needs a spec: argument 7 (aligned): aligned is a bool parameter of the host function; write x`:                  "scalar argument is a parameter of the host function",
		`kernel k needs a spec: the launch of fused_op_kernel in ops_2.cu is behind 3 macros; write x`:                            "the launch of … in … is behind N macros",
	}
	for in, want := range cases {
		if got := specClass(in); got != want {
			t.Errorf("specClass(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTritonIsNeverBuilt: a Triton kernel's build_reason says why no test
// launched it (CAP-NOT-LAUNCHED); nothing is built for it, so its built for
// CPU stays unknown while its captured launches count.
func TestTritonIsNeverBuilt(t *testing.T) {
	a := `{"kind":"analyze","kernels":[
 {"id":"k-cccccc0001","name":"fwd","path":"o.py","line":1,"origin":"triton","built_cpu":false,"captured":4,"spec_source":"tests","emulated":true},
 {"id":"k-cccccc0002","name":"bwd","path":"o.py","line":9,"origin":"triton","built_cpu":false,"captured":0,"spec_source":"none","emulated":false,
  "build_reason":{"code":"CAP-NOT-LAUNCHED","text":"8 test files ran under the interpreter, none launched bwd"}}]}`
	f := mustFolder(t, "tri", a, "")
	for _, id := range []string{"k-cccccc0001", "k-cccccc0002"} {
		if k := byID(t, f, id); k.Built != Unknown {
			t.Errorf("%s: built for CPU %v, want unknown (a Triton kernel is not built)", id, k.Built)
		}
	}
	if k := byID(t, f, "k-cccccc0001"); capturedOf(&k) != Yes {
		t.Errorf("fwd: captured %v, want yes", capturedOf(&k))
	}
}
