package deliver

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
)

var update = flag.Bool("update", false, "rewrite testdata/pr_body.md")

// bodyRun is a migrate run that changed one file and wrote the benchmark
// script.
func bodyRun() *pipeline.Run {
	return &pipeline.Run{
		Root: "/tmp/work/repo", Target: "tpu", Version: "0.1.0-test", Bench: "pallasify_bench.py",
		Files: []*pipeline.File{
			{Path: "pallasify_bench.py", Lang: pipeline.LangPython, Lines: 3, Mode: 0o644, Generated: true, Updated: []byte("print(1)\n")},
			{Path: "train.py", Lang: pipeline.LangPython, Lines: 10, Mode: 0o644, Original: []byte("a\n"), Updated: []byte("b\n"),
				Diagnostics: []pipeline.Diagnostic{{Code: "PDV001", Rule: "cuda-device-string", Severity: pipeline.SevInfo,
					Path: "train.py", Line: 3, Col: 9, Message: "device string \"cuda\"", Safety: "safe", Fix: "use the accelerator", Applied: true}}},
		},
		Timings: []pipeline.Timing{{Stage: "analyze", Duration: time.Second}},
	}
}

// TestPRBodyGolden: the pull request body, with the report's "Next steps on
// a TPU VM" checklist (install line, the benchmark command, the simulated
// TPU host, the VM's tests). Regenerate with -update.
func TestPRBodyGolden(t *testing.T) {
	md, err := RenderMarkdown(stableRun(bodyRun()))
	if err != nil {
		t.Fatal(err)
	}
	body := prBody(md, []Commit{{Hash: "0123456789abcdef", Subject: "pallasify: device strings", Files: []string{"train.py"}, Codes: []string{"PDV001"}},
		{Hash: "fedcba9876543210", Subject: "pallasify: benchmark script", Files: []string{"pallasify_bench.py"}}},
		"pallasify migrate --target tpu --bench https://github.com/o/r", "<!-- pallasify:change-set abc -->", 65000)
	p := filepath.Join("testdata", "pr_body.md")
	if *update {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if body != string(want) {
		t.Errorf("PR body differs from %s (run with -update):\n%s", p, body)
	}
}

// TestPRBodyTruncatedKeepsNextSteps: the checklist sits under the summary
// table, so a body cut to GitHub's limit still has it.
func TestPRBodyTruncatedKeepsNextSteps(t *testing.T) {
	run := bodyRun()
	f := run.Files[1]
	for i := 0; i < 3000; i++ {
		f.Diagnostics = append(f.Diagnostics, pipeline.Diagnostic{Code: "PHZ001", Severity: pipeline.SevWarning, Path: f.Path,
			Line: i + 1, Message: strings.Repeat("a long message ", 4), Safety: "diagnostic"})
	}
	md, err := RenderMarkdown(stableRun(run))
	if err != nil {
		t.Fatal(err)
	}
	body := prBody(md, nil, "pallasify migrate .", "<!-- m -->", 8000)
	if !strings.Contains(body, "Report truncated") || !strings.Contains(body, "### Next steps on a TPU VM") ||
		!strings.Contains(body, "`python pallasify_bench.py --price-per-hour PRICE`") {
		t.Errorf("truncated body (%d bytes) lost the checklist:\n%.1500s", len(body), body)
	}
}

// TestGroupFilesBench: the benchmark script is a commit of its own, last,
// not a kernel module's.
func TestGroupFilesBench(t *testing.T) {
	groups := GroupFiles(bodyRun())
	if len(groups) != 2 || groups[1].Key != "bench" || len(groups[1].Files) != 1 || groups[1].Files[0].Path != "pallasify_bench.py" {
		var keys []string
		for _, g := range groups {
			keys = append(keys, g.Key)
		}
		t.Errorf("groups %v, want device then bench", keys)
	}
}
