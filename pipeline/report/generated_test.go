package report_test

import (
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
)

// TestGeneratedModulesNotSourceFiles: the modules a migrate generates (the
// kernel stages' _pallas_*.py) are not counted as the tree's source files
// and lines — inline_act (make demo) has two files, not four — but as new
// files among those it changes; and the timings line ends without a stray
// separator.
func TestGeneratedModulesNotSourceFiles(t *testing.T) {
	run := &pipeline.Run{
		Files: []*pipeline.File{
			{Path: "pkg/ops.py", Lang: pipeline.LangPython, Mode: 0o644, Lines: 50,
				Original: []byte("x = 1\n"), Updated: []byte("x = 2\n")},
			{Path: "pkg/_pallas_ops.py", Lang: pipeline.LangPython, Mode: 0o644, Lines: 70, Generated: true,
				Updated: []byte("y = 1\n")},
		},
		Timings: []pipeline.Timing{{Stage: "analyze", Duration: 1e6}, {Stage: "validate", Duration: 2e9}},
	}
	rep := report.Build(run, "migrate", nil)
	if rep.Files != 1 || rep.Lines != 50 || rep.FilesChanged != 2 || rep.FilesAdded != 1 {
		t.Errorf("files %d lines %d changed %d added %d; want 1 50 2 1", rep.Files, rep.Lines, rep.FilesChanged, rep.FilesAdded)
	}
	var b strings.Builder
	if err := report.Write(&b, rep, report.Text); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, "  files     1 source file, 50 lines; 0 with findings; would change 2 (1 new)\n") {
		t.Errorf("files line:\n%s", text)
	}
	if !strings.Contains(text, "Timings: analyze 1ms; validate 2s\n") {
		t.Errorf("timings line:\n%s", text)
	}
}
