package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/rule"
)

var update = flag.Bool("update", false, "rewrite golden files")

var rules = []*rule.Rule{
	{Code: "PDV001", Name: "device-string", Safety: rule.Safe, Doc: "# Rewrite CUDA device strings\n\nbody"},
	{Code: "PHZ001", Name: "cuda-event", Safety: rule.DisplayOnly, Doc: "CUDA events used for timing\n"},
}

func sampleRun() *pipeline.Run {
	return &pipeline.Run{
		Root: "/src/proj", Target: "tpu", Version: "0.1.0-test",
		Files: []*pipeline.File{
			{Path: "README.md", Lang: pipeline.LangOther, Mode: 0o644},
			{Path: "bad.py", Lang: pipeline.LangPython, Lines: 3, Mode: 0o644, Skipped: pipeline.CodeSyntaxError, Diagnostics: []pipeline.Diagnostic{
				{Code: pipeline.CodeSyntaxError, Rule: "syntax-error", Severity: pipeline.SevError, Path: "bad.py", Line: 2, Col: 1, Message: "syntax error at line 2; file left untouched"}}},
			{Path: "train.py", Lang: pipeline.LangPython, Lines: 40, Mode: 0o644, Original: []byte("a\n"), Updated: []byte("b\n"), Diagnostics: []pipeline.Diagnostic{
				{Code: "PDV001", Rule: "device-string", Severity: pipeline.SevInfo, Path: "train.py", Line: 3, Col: 9, Message: "device string \"cuda\"", Safety: "safe", Fix: "use the accelerator", Applied: true},
				{Code: "PDV001", Rule: "device-string", Severity: pipeline.SevInfo, Path: "train.py", Line: 7, Col: 5, Message: "device string \"cuda:0\"", Safety: "safe", Fix: "use the accelerator", Applied: true},
				{Code: "PHZ001", Rule: "cuda-event", Severity: pipeline.SevWarning, Path: "train.py", Line: 12, Col: 5, Message: "CUDA event | used for timing", Safety: "diagnostic"}}},
			{Path: "csrc/add.cu", Lang: pipeline.LangCUDA, Lines: 20, Mode: 0o644, Diagnostics: []pipeline.Diagnostic{
				{Code: pipeline.KernelCodes()[1].Code, Severity: pipeline.SevWarning, Path: "csrc/add.cu", Line: 4, Message: "spec could not be inferred"}}},
			{Path: "link.py", Lang: pipeline.LangPython, Mode: os.ModeSymlink | 0o777, Skipped: pipeline.CodeSymlinkOut, Diagnostics: []pipeline.Diagnostic{
				{Code: pipeline.CodeSymlinkOut, Severity: pipeline.SevWarning, Path: "link.py", Message: "symlink points outside the tree"}}},
		},
		Kernels: []*pipeline.Kernel{{ID: "k1", Name: "add_kernel", Path: "csrc/add.cu", Line: 4, Origin: "cu-file", Class: "elementwise", SpecStatus: "inferred", EmuStatus: "compiled"}},
		Timings: []pipeline.Timing{{Stage: "acquire", Duration: time.Millisecond}, {Stage: "analyze", Duration: 1500 * time.Millisecond}},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestBuild(t *testing.T) {
	rep := Build(sampleRun(), "analyze", rules)
	if rep.Files != 2 || rep.Lines != 43 || rep.Sites != 3 || rep.AutoFixable != 2 || rep.Manual != 1 || rep.FilesChanged != 1 || rep.FilesWithHit != 1 {
		t.Errorf("counts = files %d lines %d sites %d auto %d manual %d changed %d hit %d", rep.Files, rep.Lines, rep.Sites, rep.AutoFixable, rep.Manual, rep.FilesChanged, rep.FilesWithHit)
	}
	if len(rep.Problems) != 2 || len(rep.ManualSites) != 1 || len(rep.Kernels) != 1 || rep.Kernels[0].Verdict != "-" {
		t.Errorf("problems %d manual %d kernels %+v", len(rep.Problems), len(rep.ManualSites), rep.Kernels)
	}
	if rep.Effort.Level != "medium" {
		t.Errorf("effort = %+v", rep.Effort)
	}
}

func TestBuildAnalyzeCountsWouldChange(t *testing.T) {
	run := &pipeline.Run{Files: []*pipeline.File{{Path: "a.py", Lang: pipeline.LangPython, Mode: 0o644, Diagnostics: []pipeline.Diagnostic{
		{Code: "PDV001", Path: "a.py", Line: 1, Applied: true}}}}}
	if rep := Build(run, "analyze", rules); rep.FilesChanged != 1 || !rep.PerFile[0].Changed {
		t.Errorf("analyze run with an applied fix: FilesChanged = %d", rep.FilesChanged)
	}
}

func TestEstimate(t *testing.T) {
	cases := []struct {
		sites, auto, kernels, wired int
		want                        string
	}{
		{0, 0, 0, 0, "none"}, {10, 10, 0, 0, "low"}, {10, 9, 0, 0, "low"}, {10, 9, 1, 0, "medium"}, {10, 6, 3, 0, "medium"},
		{10, 5, 0, 0, "high"}, {10, 10, 4, 0, "high"}, {0, 0, 1, 0, "medium"},
		// a kernel proven and wired in is no kernel left, but the reason names it
		{2, 2, 0, 1, "low"}, {0, 0, 0, 1, "low"}, {10, 9, 1, 1, "medium"},
	}
	for _, c := range cases {
		e := Estimate(c.sites, c.auto, c.kernels, c.wired)
		if e.Level != c.want {
			t.Errorf("Estimate(%d, %d, %d, %d) = %s; want %s", c.sites, c.auto, c.kernels, c.wired, e.Level, c.want)
		}
		if c.wired > 0 && (strings.Contains(e.Reason, "no custom kernels") || !strings.Contains(e.Reason, "proven and wired in")) {
			t.Errorf("Estimate(%d, %d, %d, %d) says %q", c.sites, c.auto, c.kernels, c.wired, e.Reason)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, f := range []Format{Text, Markdown, JSON, SARIF} {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, Build(sampleRun(), "analyze", rules), f); err != nil {
				t.Fatal(err)
			}
			golden(t, "sample."+string(f), b.Bytes())
		})
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) succeeded")
	}
}

// TestSARIFRequired checks the fields SARIF 2.1.0 requires (and those code
// scanning services read) on the decoded document, not on our structs.
func TestSARIFRequired(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Build(sampleRun(), "analyze", rules), SARIF); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["version"] != "2.1.0" || doc["$schema"] != SARIFSchema {
		t.Fatalf("version/$schema = %v/%v", doc["version"], doc["$schema"])
	}
	runs := doc["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("runs = %d", len(runs))
	}
	run := runs[0].(map[string]any)
	driver := run["tool"].(map[string]any)["driver"].(map[string]any)
	if driver["name"] != "pallasify" {
		t.Errorf("driver.name = %v", driver["name"])
	}
	ids := map[string]bool{}
	for _, r := range driver["rules"].([]any) {
		rm := r.(map[string]any)
		id, _ := rm["id"].(string)
		sd, _ := rm["shortDescription"].(map[string]any)
		if id == "" || sd == nil || sd["text"] == "" {
			t.Errorf("rule without id/shortDescription: %v", rm)
		}
		ids[id] = true
	}
	results := run["results"].([]any)
	if len(results) != 6 {
		t.Errorf("results = %d; want 6 (3 findings, 2 problems, 1 kernel note)", len(results))
	}
	levels := map[string]bool{"none": true, "note": true, "warning": true, "error": true}
	for _, r := range results {
		rm := r.(map[string]any)
		if !ids[rm["ruleId"].(string)] {
			t.Errorf("result ruleId %v not among driver rules", rm["ruleId"])
		}
		if !levels[rm["level"].(string)] {
			t.Errorf("bad level %v", rm["level"])
		}
		if rm["message"].(map[string]any)["text"] == "" {
			t.Error("empty message")
		}
		pl := rm["locations"].([]any)[0].(map[string]any)["physicalLocation"].(map[string]any)
		uri := pl["artifactLocation"].(map[string]any)["uri"].(string)
		reg := pl["region"].(map[string]any)
		if uri == "" || strings.HasPrefix(uri, "/") || reg["startLine"].(float64) < 1 || reg["startColumn"].(float64) < 1 {
			t.Errorf("bad location %v", pl)
		}
	}
}

func TestColorDiff(t *testing.T) {
	patch := []byte("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	var plain, col bytes.Buffer
	ColorDiff(&plain, patch, false)
	ColorDiff(&col, patch, true)
	if !bytes.Equal(plain.Bytes(), patch) {
		t.Error("uncoloured diff altered")
	}
	if !bytes.Contains(col.Bytes(), []byte("\x1b[31m-a")) || !bytes.Contains(col.Bytes(), []byte("\x1b[32m+b")) {
		t.Errorf("coloured diff = %q", col.String())
	}
	env := func(v string) func(string) string { return func(string) string { return v } }
	cases := []struct {
		tty  bool
		nc   string
		want bool
	}{{true, "", true}, {true, "1", false}, {false, "", false}}
	for _, c := range cases {
		if got := ColorEnabled(c.tty, env(c.nc)); got != c.want {
			t.Errorf("ColorEnabled(%v, NO_COLOR=%q) = %v", c.tty, c.nc, got)
		}
	}
}

// The JSON kernel entries carry the capture stage's facts under the keys the
// corpus benchmark reads.
func TestKernelCaptureJSON(t *testing.T) {
	run := sampleRun()
	run.Kernels = append(run.Kernels,
		&pipeline.Kernel{ID: "k2", Name: "roi_align_forward_cuda_kernel", Path: "mmcv/ops/csrc/roi_align.cu", Origin: "cuda-extension",
			BuiltCPU: true, Captured: 4, SpecSource: pipeline.SpecTests, Emulated: true, TPUCompiled: map[string]bool{"v5e": true, "v6e": false},
			Draft: &pipeline.Draft{Drafter: "rules", Verdict: pipeline.VerdictProven, Module: "mmcv/ops/_pallas_roi.py"}},
		&pipeline.Kernel{ID: "k3", Name: "tex_kernel", Path: "csrc/tex.cu", Origin: "load",
			BuildReason: &pipeline.BuildReason{Code: "EMU-UNSUPPORTED", Text: "texture<float, 2>"}})
	var b bytes.Buffer
	if err := Write(&b, Build(run, "migrate", rules), JSON); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kernels []map[string]any `json:"kernels"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Kernels) != 3 {
		t.Fatalf("kernels = %d", len(doc.Kernels))
	}
	want := []map[string]any{
		{"built_cpu": false, "captured": 0.0, "spec_source": "none", "emulated": false, "drafted": false, "proven": false, "wired": false},
		{"built_cpu": true, "captured": 4.0, "spec_source": "tests", "emulated": true, "drafted": true, "proven": true, "wired": true,
			"tpu_compiled": map[string]any{"v5e": true, "v6e": false}},
		{"built_cpu": false, "spec_source": "none", "build_reason": map[string]any{"code": "EMU-UNSUPPORTED", "text": "texture<float, 2>"}},
	}
	for i, w := range want {
		for key, v := range w {
			got, ok := doc.Kernels[i][key]
			if !ok || !reflect.DeepEqual(got, v) {
				t.Errorf("kernel %d %q = %v (present %v), want %v", i, key, got, ok, v)
			}
		}
	}
	if _, ok := doc.Kernels[1]["build_reason"]; ok {
		t.Errorf("a built kernel has a build_reason: %v", doc.Kernels[1])
	}
}
