package report

import (
	"bufio"
	"fmt"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/codes"
	"github.com/pallasify/pallasify/transforms/files"
)

// NextStep is one item of the "Next steps on a TPU VM" checklist of a
// migrate report (and so of the pull request's body): what to do, the
// command that does it, and a note (why the benchmark has no model yet).
type NextStep struct {
	Step    string `json:"step"`
	Command string `json:"command,omitempty"`
	Note    string `json:"note,omitempty"`
}

// InstallCommand installs TorchTPU on a TPU VM: the torch it accepts (the
// newest, 2.15) and the torch-tpu pin the requirement rules write.
const InstallCommand = "pip install 'torch==2.15.*' " + files.TorchTPURequirement

// benchNote reports whether d is about the benchmark script (PBN): such
// a diagnostic goes with the checklist's benchmark step, not the kernel
// notes.
func benchNote(d pipeline.Diagnostic) bool { return codes.FamilyOf(d.Code) == "PBN" }

// nextSteps is the checklist of a migrate run: install TorchTPU, run the
// benchmark script when the run wrote one (notes: its PBN diagnostics),
// check the tests on the simulated TPU host, then run them on the VM.
func nextSteps(run *pipeline.Run, notes []pipeline.Diagnostic) []NextStep {
	target := run.Target
	if target == "" {
		target = "portable"
	}
	steps := []NextStep{{Step: "Install TorchTPU on the VM (then the project's own requirements)", Command: InstallCommand}}
	if run.Bench != "" {
		b := NextStep{Step: "Time a step of the model on the VM, and on the GPU host to compare (PRICE: the machine's hourly price)",
			Command: "python " + run.Bench + " --price-per-hour PRICE"}
		for _, d := range notes {
			if d.Code == pipeline.CodeBenchNoModel {
				b.Note = "no model was found for it: name one in pallasify.yaml, bench: {model: \"package.module:factory\"}, " +
					"or pass --model package.module:factory"
			}
		}
		steps = append(steps, b)
	}
	return append(steps,
		NextStep{Step: "Before the VM, run the tests on the simulated TPU host (it lists what would fail on a TPU)",
			Command: "pallasify verify --tpu --target " + target + " . -- python -m pytest -q"},
		NextStep{Step: "Run the tests on the VM", Command: "python -m pytest -q"})
}

func writeNextStepsText(b *bufio.Writer, rep *Report) {
	if len(rep.NextSteps) == 0 {
		return
	}
	b.WriteString("\nNext steps on a TPU VM:\n")
	for _, s := range rep.NextSteps {
		fmt.Fprintf(b, "  [ ] %s:\n        %s\n", s.Step, s.Command)
		if s.Note != "" {
			fmt.Fprintf(b, "        (%s)\n", s.Note)
		}
	}
}

func writeNextStepsMarkdown(b *bufio.Writer, rep *Report) {
	if len(rep.NextSteps) == 0 {
		return
	}
	b.WriteString("### Next steps on a TPU VM\n\n")
	for _, s := range rep.NextSteps {
		fmt.Fprintf(b, "- [ ] %s: `%s`", mdEscape(s.Step), s.Command)
		if s.Note != "" {
			fmt.Fprintf(b, " (%s)", s.Note)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
