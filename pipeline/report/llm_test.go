package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
)

func TestLLMTotals(t *testing.T) {
	run := &pipeline.Run{Root: "r", Target: "tpu", Kernels: []*pipeline.Kernel{
		{ID: "k-1", Name: "scan_k", Path: "a.cu", Class: "scan", Draft: &pipeline.Draft{Drafter: "llm", Verdict: "proven", Rounds: 2, Tokens: 300, Calls: 2}},
		{ID: "k-2", Name: "hist_k", Path: "a.cu", Class: "histogram", Draft: &pipeline.Draft{Drafter: "llm", Verdict: "rejected", Reason: "V-MISMATCH: x (after 4 rounds)", Rounds: 4, Tokens: 900, Calls: 4}},
		{ID: "k-3", Name: "ew_k", Path: "a.cu", Class: "elementwise", Draft: &pipeline.Draft{Drafter: "rules", Verdict: "proven"}},
		{ID: "k-4", Name: "mm_k", Path: "a.cu", Class: "matmul-tile", Draft: &pipeline.Draft{Drafter: "none", Verdict: "needs-llm", Reason: "no LLM endpoint: set PALLASIFY_LLM_BASE_URL"}},
	}}
	rep := Build(run, "migrate", nil)
	want := LLMTotals{Kernels: 2, Proven: 1, NeedsLLM: 1, Calls: 6, Tokens: 1200, Fix: "no LLM endpoint: set PALLASIFY_LLM_BASE_URL"}
	if rep.LLM == nil || *rep.LLM != want {
		t.Fatalf("totals %+v, want %+v", rep.LLM, want)
	}
	if r := rep.Kernels[0]; r.Rounds != 2 || r.Tokens != 300 || r.Calls != 2 {
		t.Errorf("row %+v", r)
	}
	var text, md, js bytes.Buffer
	for f, w := range map[Format]*bytes.Buffer{Text: &text, Markdown: &md, JSON: &js} {
		if err := Write(w, rep, f); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"scan_k: llm draft proven after 2 rounds, 300 tokens, 2 calls", "hist_k: llm draft rejected after 4 rounds",
		"LLM total: 6 calls, 1200 tokens; 1 of 2 drafted kernels proven", "needs-llm: 1 kernels; no LLM endpoint"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, text.String())
		}
	}
	if !strings.Contains(md.String(), "LLM drafting: 2 kernels (1 proven), 6 calls, 1200 tokens") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var back struct {
		LLM *LLMTotals `json:"llm"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.LLM == nil || back.LLM.Tokens != 1200 {
		t.Errorf("json llm %+v %v", back.LLM, err)
	}
	// No LLM involvement: no totals, output unchanged.
	if Build(&pipeline.Run{Kernels: run.Kernels[2:3]}, "migrate", nil).LLM != nil {
		t.Error("totals without LLM drafts")
	}
}
