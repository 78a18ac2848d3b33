package hazards

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/compile"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var capturableExample = rule.Example{
	Before: `import torch

model = torch.compile(Net())
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
`,
}

// statefulOptimizers are the torch.optim classes that take capturable=.
var statefulOptimizers = map[string]bool{
	"Adam": true, "AdamW": true, "Adamax": true, "ASGD": true, "NAdam": true, "RAdam": true, "RMSprop": true, "Adadelta": true,
}

// OptimizerCapturable reports stateful optimizers under compile.
var OptimizerCapturable = &rule.Rule{
	Code:   "PDX005",
	Name:   "optimizer-not-capturable",
	Family: Family,
	Safety: rule.DisplayOnly,
	// A finding is a call qualified as torch.optim.<one of statefulOptimizers>,
	// whose last component is source text (in the call or its import): a
	// name in code, never a string literal, so `\q` (rule.StringStart) is
	// sound (no `\b` before: NAdam, RAdam).
	// ("compile" missed modules that PCM002 would start compiling: WillCompile.)
	Needles: []string{`\qAdam`, `\qASGD`, `\qRMSprop`, `\qAdadelta`},
	Example: capturableExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Stateful optimizer without `capturable=True` in a module that uses torch.compile",
		What: "In a module that calls `torch.compile` (or whose model the opt-in PCM002 would compile), reports `torch.optim.{Adam, AdamW, Adamax, ASGD, NAdam, RAdam, " +
			"RMSprop, Adadelta}` constructed without `capturable=True`.",
		Why: "TorchTPU needs stateful optimizers to keep their step counters on the device when the step is compiled, " +
			"which is what `capturable=True` does; TorchTPU requires it of Adam, AdamW, RMSprop and the other stateful optimizers when the train step is compiled. On CPU, `capturable=True` raises, so portable code " +
			"should pass `capturable=(DEVICE.type != \"cpu\")`.",
		Safety: "Diagnostic only: whether the optimizer step runs under compile depends on code in other modules, and " +
			"the right value differs between CPU and accelerator runs.",
	}, capturableExample),
	Run: runOptimizerCapturable,
}

func runOptimizerCapturable(p *rule.Pass) {
	if !compile.WillCompile(p) {
		return
	}
	kit.Calls(p, func(call *ts.Node) {
		name := kit.CallName(p, call)
		cls, ok := strings.CutPrefix(name, "torch.optim.")
		if !ok || !statefulOptimizers[cls] {
			return
		}
		args := kit.Args(call)
		if v := kit.KwargValue(p, args, "capturable"); v != nil {
			if b, lit := kit.Bool(v); !lit || b {
				return
			}
		}
		if kit.HasSplat(args) && kit.Kwarg(p, args, "capturable") == nil {
			return // **kwargs may carry it
		}
		advice := "pass capturable=(DEVICE.type != \"cpu\") so CPU runs keep working"
		if p.Target == rule.TPU {
			advice = "pass capturable=True"
		}
		p.Report(kit.Finding(call, cls+" under torch.compile needs capturable=True on TPU; "+advice, nil))
	})
}
