package report_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
)

// TestWiredKernelNotLeftToAHuman: a kernel the stages proved and wired is
// not under "needs a human", does not raise the effort, and its emulator
// column says the validation ran the original there; an unwired one still
// counts.
func TestWiredKernelNotLeftToAHuman(t *testing.T) {
	site := pipeline.Diagnostic{Path: "pkg/ops.py", Line: 30, Code: "PDX006", Message: "custom CUDA kernel (load_inline)"}
	for _, tc := range []struct {
		name       string
		draft      *pipeline.Draft
		wantManual int
		wantLevel  string
		wantEmu    string
	}{
		{"proven and wired", &pipeline.Draft{Drafter: "rules", Verdict: pipeline.VerdictProven, Module: "pkg/_pallas_k.py"}, 0, "low", "ran (validation reference)"},
		{"proven, not wired", &pipeline.Draft{Drafter: "rules", Verdict: pipeline.VerdictProven}, 1, "high", "ran (validation reference)"},
		{"not drafted", &pipeline.Draft{Drafter: "none", Verdict: "not-drafted"}, 1, "high", "not-run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &pipeline.Run{
				Files: []*pipeline.File{{Path: "pkg/ops.py", Lang: pipeline.LangPython, Mode: 0o644, Diagnostics: []pipeline.Diagnostic{site}}},
				Kernels: []*pipeline.Kernel{{ID: "k-1", Name: "k", Path: "pkg/ops.py", Line: 10, Class: "elementwise",
					SpecStatus: "inferred", Draft: tc.draft}},
			}
			rep := report.Build(run, "migrate", nil)
			if got := len(rep.ManualSites); got != tc.wantManual {
				t.Errorf("manual sites = %d; want %d", got, tc.wantManual)
			}
			if rep.Effort.Level != tc.wantLevel {
				t.Errorf("effort = %s (%s); want %s", rep.Effort.Level, rep.Effort.Reason, tc.wantLevel)
			}
			if got := rep.Kernels[0].Emulator; got != tc.wantEmu {
				t.Errorf("emulator = %q; want %q", got, tc.wantEmu)
			}
			// the json's emulated says the same as the emulator column
			if got, want := rep.Kernels[0].Emulated, tc.wantEmu != "not-run"; got != want {
				t.Errorf("emulated = %v; want %v (emulator column %q)", got, want, tc.wantEmu)
			}
		})
	}
}

// TestWiredNoteIsNoChange: on a second migrate the kernel is already wired;
// its PDR001 note (applied: wired) is no edit, so the file is not counted
// as changed (migrate --check exits 0).
func TestWiredNoteIsNoChange(t *testing.T) {
	note := pipeline.Diagnostic{Path: "pkg/ops.py", Line: 10, Code: pipeline.CodeDraftProven, Applied: true}
	run := &pipeline.Run{Files: []*pipeline.File{{Path: "pkg/ops.py", Lang: pipeline.LangPython, Mode: 0o644,
		Diagnostics: []pipeline.Diagnostic{note}}}}
	if got := report.Build(run, "migrate", nil).FilesChanged; got != 0 {
		t.Errorf("files changed = %d; want 0", got)
	}
	run.Files[0].Updated = []byte("changed\n")
	if got := report.Build(run, "migrate", nil).FilesChanged; got != 1 {
		t.Errorf("with an edit: files changed = %d; want 1", got)
	}
}

// TestCapturedKernelEmulatorColumn: a kernel the repository's tests launched
// on the emulator (captured) but that no validation ran says so in the
// emulator column, agreeing with the json's emulated.
func TestCapturedKernelEmulatorColumn(t *testing.T) {
	run := &pipeline.Run{Kernels: []*pipeline.Kernel{{ID: "k-1", Name: "k", Path: "k.cu", Line: 1, Class: "row-reduction",
		SpecStatus: "captured", Captured: 2, Emulated: true, Draft: &pipeline.Draft{Drafter: "none", Verdict: "needs-llm"}}}}
	row := report.Build(run, "migrate", nil).Kernels[0]
	if row.Emulator != "ran (captured launches)" || !row.Emulated {
		t.Errorf("emulator column %q, emulated %v; want ran (captured launches), true", row.Emulator, row.Emulated)
	}
}

// TestOneTruthEveryFormat: on a run with one kernel proven and wired and one
// refused, every format lists only the refused kernel's site as left to a
// human (text and markdown "Needs a human", json manual_sites, SARIF level).
func TestOneTruthEveryFormat(t *testing.T) {
	wired := pipeline.Diagnostic{Path: "pkg/ops.py", Line: 30, Code: "PDX006", Severity: pipeline.SevWarning, Message: "custom CUDA kernel (load_inline)"}
	refused := pipeline.Diagnostic{Path: "pkg/hist.py", Line: 21, Code: "PDX006", Severity: pipeline.SevWarning, Message: "custom CUDA kernel (load_inline)"}
	run := &pipeline.Run{
		Files: []*pipeline.File{
			{Path: "pkg/ops.py", Lang: pipeline.LangPython, Mode: 0o644, Diagnostics: []pipeline.Diagnostic{wired}},
			{Path: "pkg/hist.py", Lang: pipeline.LangPython, Mode: 0o644, Diagnostics: []pipeline.Diagnostic{refused}},
		},
		Kernels: []*pipeline.Kernel{
			{ID: "k-1", Name: "silu", Path: "pkg/ops.py", Line: 10, Class: "elementwise", SpecStatus: "inferred",
				Draft: &pipeline.Draft{Drafter: "rules", Verdict: pipeline.VerdictProven, Module: "pkg/_pallas_silu.py"}},
			{ID: "k-2", Name: "hist", Path: "pkg/hist.py", Line: 8, Class: "histogram", SpecStatus: "inferred",
				Draft: &pipeline.Draft{Drafter: "none", Verdict: "needs-llm", Reason: "rules: PPL001: class histogram"}},
		},
	}
	rep := report.Build(run, "migrate", nil)
	if rep.Effort.Kernels != 1 {
		t.Errorf("effort counts %d kernels; want 1 (the refused one)", rep.Effort.Kernels)
	}
	render := func(f report.Format) string {
		var b strings.Builder
		if err := report.Write(&b, rep, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return b.String()
	}
	for _, f := range []report.Format{report.Text, report.Markdown} {
		out := render(f)
		i := strings.Index(out, "Needs a human")
		if i < 0 {
			t.Fatalf("%s: no Needs a human section:\n%s", f, out)
		}
		section := out[i:]
		if j := strings.Index(section, "Kernels"); j >= 0 {
			section = section[:j]
		}
		if !strings.Contains(section, "pkg/hist.py:21") || strings.Contains(section, "pkg/ops.py") {
			t.Errorf("%s: Needs a human lists:\n%s", f, section)
		}
	}
	var js struct {
		ManualSites []pipeline.Diagnostic `json:"manual_sites"`
	}
	if err := json.Unmarshal([]byte(render(report.JSON)), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.ManualSites) != 1 || js.ManualSites[0].Path != "pkg/hist.py" {
		t.Errorf("json manual_sites = %+v", js.ManualSites)
	}
	var sarif struct {
		Runs []struct {
			Results []struct {
				Level     string `json:"level"`
				Locations []struct {
					Physical struct {
						Artifact struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(render(report.SARIF)), &sarif); err != nil {
		t.Fatal(err)
	}
	levels := map[string]string{}
	for _, r := range sarif.Runs[0].Results {
		if len(r.Locations) > 0 {
			levels[r.Locations[0].Physical.Artifact.URI] = r.Level
		}
	}
	if len(levels) != 2 || levels["pkg/ops.py"] == "warning" || levels["pkg/hist.py"] != "warning" {
		t.Errorf("sarif levels %v: the wired kernel's site is no warning, the refused one's is", levels)
	}
}
