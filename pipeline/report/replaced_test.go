package report_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
)

// TestWiredKernelSiteReplacedNotFixed: the inline_act shape (make demo) — one
// rule fix and one custom-kernel site (PDX006, a diagnostic rule: it fixes
// nothing) whose kernel the kernel stages proved and wired in. The kernel
// site is counted as replaced, not fixed (text, Markdown, HTML and JSON),
// and the summary does not say "kernels 1" and then "no custom kernels".
func TestWiredKernelSiteReplacedNotFixed(t *testing.T) {
	fixed := pipeline.Diagnostic{Path: "pkg/ops.py", Line: 40, Code: "PDV001", Rule: "cuda-device-string", Safety: "safe",
		Message: "device string", Applied: true}
	site := pipeline.Diagnostic{Path: "pkg/ops.py", Line: 30, Code: "PDX006", Rule: "custom-cuda-kernel", Safety: "diagnostic",
		Message: "custom CUDA kernel (load_inline)"}
	run := &pipeline.Run{
		Files: []*pipeline.File{{Path: "pkg/ops.py", Lang: pipeline.LangPython, Mode: 0o644, Lines: 50,
			Diagnostics: []pipeline.Diagnostic{fixed, site}}},
		Kernels: []*pipeline.Kernel{{ID: "k-1", Name: "silu", Path: "pkg/ops.py", Line: 10, Class: "elementwise",
			SpecStatus: "inferred", Draft: &pipeline.Draft{Drafter: "rules", Verdict: pipeline.VerdictProven, Module: "pkg/_pallas_silu.py"}}},
	}
	rep := report.Build(run, "analyze", nil)
	render := func(f report.Format) string {
		var b strings.Builder
		if err := report.Write(&b, rep, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return b.String()
	}

	text := render(report.Text)
	line := func(prefix string) string {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q in:\n%s", prefix, text)
		return ""
	}
	if l := line("  sites "); l != "  sites     2: 1 auto-fixable, 1 replaced by a proven Pallas kernel, 0 need a human" {
		t.Errorf("sites line %q: want 1 auto-fixable, 1 replaced, 0 need a human", l)
	}
	if l := line("  kernels "); !strings.Contains(l, "1 proven and wired in") {
		t.Errorf("kernels line %q: want the wired kernel counted", l)
	}
	if l := line("  effort "); strings.Contains(l, "no custom kernels") || !strings.Contains(l, "proven and wired in") {
		t.Errorf("effort line %q contradicts the kernel found (want it named proven and wired in)", l)
	}
	// CODE NAME SAFETY SITES FIXED MANUAL [REPLACED]
	if f := strings.Fields(line("  PDX006 ")); len(f) < 6 || f[4] != "0" || f[5] != "0" {
		t.Errorf("by rule: %v; a diagnostic rule's site is neither fixed nor manual", f)
	}
	if f := strings.Fields(line("  PDV001 ")); len(f) < 6 || f[4] != "1" {
		t.Errorf("by rule: %v; the rule fix is fixed", f)
	}
	// PATH LINES SITES FIXED MANUAL [REPLACED] RULES
	if f := strings.Fields(line("  pkg/ops.py ")); len(f) < 5 || f[3] != "1" {
		t.Errorf("by file: %v; one site fixed", f)
	}

	md := render(report.Markdown)
	if !strings.Contains(md, "| `PDX006` | custom-cuda-kernel | diagnostic | 1 | 0 | 0 | 1 |") {
		t.Errorf("markdown by rule does not count PDX006 as replaced:\n%s", md)
	}

	if html := render(report.HTML); !strings.Contains(html, "1 replaced by a proven Pallas kernel") {
		t.Error("the HTML report's sites do not count the replaced site")
	}

	var js struct {
		AutoFixable int `json:"auto_fixable"`
		Manual      int `json:"manual"`
		ByRule      []struct {
			Code    string `json:"code"`
			Applied int    `json:"applied"`
		} `json:"by_rule"`
	}
	if err := json.Unmarshal([]byte(render(report.JSON)), &js); err != nil {
		t.Fatal(err)
	}
	if js.AutoFixable != 1 || js.Manual != 0 {
		t.Errorf("json auto_fixable %d manual %d; want 1 0", js.AutoFixable, js.Manual)
	}
	for _, rc := range js.ByRule {
		if rc.Code == "PDX006" && rc.Applied != 0 {
			t.Errorf("json by_rule PDX006 applied %d; want 0 (a diagnostic rule fixes nothing)", rc.Applied)
		}
	}
}
