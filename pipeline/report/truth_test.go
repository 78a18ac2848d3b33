package report_test

import (
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
