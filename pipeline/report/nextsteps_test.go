package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
)

// migrateRun is sampleRun as a migrate run that wrote the benchmark script.
func migrateRun() *pipeline.Run {
	run := sampleRun()
	run.Bench = "pallasify_bench.py"
	return run
}

// TestNextStepsFormats: a migrate report ends its summary (Markdown: right
// under the summary table, so a truncated pull request body keeps it;
// text: before the timings) with the "Next steps on a TPU VM" checklist.
func TestNextStepsFormats(t *testing.T) {
	for _, f := range []Format{Text, Markdown} {
		var b bytes.Buffer
		if err := Write(&b, Build(migrateRun(), "migrate", rules), f); err != nil {
			t.Fatal(err)
		}
		golden(t, "sample-migrate."+string(f), b.Bytes())
	}
}

// TestNextSteps: the checklist's items (install, the benchmark command when
// the run wrote the script, the simulated TPU host, the VM's tests), none
// for analyze, and a PBN diagnostic said by the benchmark step, not listed
// among the kernel notes.
func TestNextSteps(t *testing.T) {
	if rep := Build(sampleRun(), "analyze", rules); len(rep.NextSteps) != 0 {
		t.Errorf("analyze report has next steps %v", rep.NextSteps)
	}
	steps := Build(sampleRun(), "migrate", rules).NextSteps
	var cmds []string
	for _, s := range steps {
		cmds = append(cmds, s.Command)
	}
	want := []string{"pip install 'torch==2.15.*' torch-tpu==0.2.0", "pallasify verify --tpu --target tpu . -- python -m pytest -q",
		"python -m pytest -q"}
	if strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(want, "\n"))
	}
	run := migrateRun()
	run.Bench = "tools/pallasify_bench.py"
	run.Diagnostics = append(run.Diagnostics, pipeline.Diagnostic{Code: pipeline.CodeBenchNoModel, Severity: pipeline.SevWarning,
		Path: run.Bench, Message: "no model"})
	rep := Build(run, "migrate", rules)
	if len(rep.NextSteps) != 4 || rep.NextSteps[1].Command != "python tools/pallasify_bench.py --price-per-hour PRICE" ||
		!strings.Contains(rep.NextSteps[1].Note, "bench: {model:") {
		t.Errorf("benchmark step: %+v", rep.NextSteps)
	}
	for _, d := range rep.KernelNotes {
		if d.Code == pipeline.CodeBenchNoModel {
			t.Errorf("%s listed among the kernel notes", d.Code)
		}
	}
}
