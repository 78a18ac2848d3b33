package hazards

import (
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var lightningAcceleratorExample = rule.Example{
	Before: `import lightning as L
import torch


def build(accelerator="auto"):
    if accelerator == "auto":
        accelerator = "cuda" if torch.cuda.device_count() else "cpu"
    return L.Fabric(accelerator=accelerator, devices=1)


trainer = L.Trainer(accelerator="gpu", devices=8, strategy="ddp", precision="16-mixed")
`,
}

// LightningAccelerator reports the Lightning accelerators that stay
// CUDA-only (or PyTorch/XLA) after the migration.
var LightningAccelerator = &rule.Rule{
	Code:   "PDX014",
	Name:   "lightning-accelerator",
	Family: Family,
	Safety: rule.DisplayOnly,
	// Every site is in a file that calls Lightning's Trainer or Fabric
	// (imported from lightning, pytorch_lightning or lightning_fabric) with
	// accelerator= or gpus=.
	Needles: []string{`lightning & accelerator`, `lightning & gpus`},
	Example: lightningAcceleratorExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Lightning Trainer/Fabric on the \"cuda\"/\"gpu\" (or PyTorch/XLA \"tpu\") accelerator",
		What: "Reports the accelerator of Lightning's `Trainer` and `Fabric` (`lightning`, `lightning.pytorch`, " +
			"`lightning.fabric`, `pytorch_lightning`, `lightning_fabric`; `L.Fabric(...)`, `pl.Trainer(...)`) when it " +
			"is `\"cuda\"`, `\"gpu\"` or `\"tpu\"`: the `accelerator=` argument itself, or, where the argument is a " +
			"variable, each such literal of the same function that the variable is assigned (`accelerator = \"cuda\"`), " +
			"takes as its default or names in its annotation (`Literal[\"cpu\", \"cuda\", \"auto\"]`), is compared " +
			"with (`accelerator not in (\"cuda\", \"gpu\")`) or is tested against " +
			"(`allowed = {\"cpu\", \"gpu\", \"cuda\"}` ... `accelerator not in allowed`). One finding per line. " +
			"Also reports `gpus=` (Lightning before 2.0: `accelerator=\"gpu\", devices=N`). The finding on the call " +
			"names its `strategy=\"ddp\"` (NCCL on GPUs) and an fp16 `precision=` (TPUs compute in bf16: " +
			"`\"bf16-mixed\"`). A CUDA check whose branch sets such an accelerator (`if torch.cuda.is_available(): " +
			"accelerator = \"cuda\"`) is kept as it is (cuda-only-guard, PCU012), so that a TPU host takes the " +
			"path it took before the migration (`\"cpu\"` there) instead of asking Lightning for CUDA.",
		Why: "Lightning ships no TorchTPU accelerator: `\"cuda\"`/`\"gpu\"` fail on a TPU host, and Lightning's " +
			"`\"tpu\"` is its PyTorch/XLA accelerator, which needs torch_xla, which must not be mixed with TorchTPU " +
			"in one process. `\"auto\"` finds neither and runs on the CPU. No rule can rewrite the value to " +
			"something Lightning runs on a TPU.",
		Safety: "Diagnostic only: run the TPU path without a Lightning accelerator (the model and the batches on " +
			"`torch.device(\"tpu\")`, the `\"tpu_dist\"` process group, bf16), or keep this run on CUDA.",
	}, lightningAcceleratorExample),
	Run: runLightningAccelerator,
}

func runLightningAccelerator(p *rule.Pass) {
	lines := map[int]bool{}
	report := func(n *ts.Node, msg string) {
		line := int(n.StartPoint().Row)
		if lines[line] {
			return
		}
		lines[line] = true
		p.Report(kit.Finding(n, msg, nil))
	}
	for _, s := range kit.LightningSites(p) {
		report(s.Lit, lightningMessage(p, s))
	}
	kit.Calls(p, func(call *ts.Node) {
		if !kit.LightningCall(p, call) {
			return
		}
		gpus := kit.Kwarg(p, p.Field(call, "arguments"), "gpus")
		if gpus == nil || kit.IsNone(gpus.ChildByFieldName("value")) {
			return
		}
		report(gpus, "`gpus=` asks Lightning (before 2.0) for NVIDIA GPUs, like `accelerator=\"gpu\"`"+
			callExtras(p, call)+"; "+lightningAdvice)
	})
}

const lightningAdvice = "Lightning has no TorchTPU accelerator (its \"tpu\" is PyTorch/XLA, which must not be mixed " +
	"with TorchTPU), so it is left as it is: run the TPU path without a Lightning accelerator (the model and " +
	"batches on torch.device(\"tpu\"), the \"tpu_dist\" process group, bf16), or keep this run on CUDA"

// lightningMessage says what a LightningSite is.
func lightningMessage(p *rule.Pass, s kit.LightningSite) string {
	callee := kit.Dotted(p, p.Field(s.Call, "function")) + "(...)"
	line := strconv.Itoa(int(s.Call.StartPoint().Row) + 1)
	var what string
	switch {
	case s.Via == "":
		what = "Lightning's " + p.Text(s.Lit) + " accelerator" + callExtras(p, s.Call)
	case s.Check:
		what = p.Text(s.Lit) + " is checked as a value of `" + s.Via + "`, the accelerator of `" + callee +
			"` (line " + line + ")"
	default:
		what = "`" + s.Via + "` becomes " + p.Text(s.Lit) + ", the accelerator of `" + callee + "` (line " + line + ")"
	}
	if s.Value == "tpu" {
		return what + ": Lightning's \"tpu\" accelerator is PyTorch/XLA, which needs torch_xla, and torch_xla must " +
			"not be mixed with TorchTPU; Lightning has no TorchTPU accelerator: run the TPU path without one (the " +
			"model and batches on torch.device(\"tpu\"), the \"tpu_dist\" process group)"
	}
	return what + ": NVIDIA GPUs only; " + lightningAdvice
}

// callExtras names what else of a Trainer/Fabric call is CUDA's: a ddp
// strategy (NCCL on GPUs) and fp16 precision.
func callExtras(p *rule.Pass, call *ts.Node) string {
	args := p.Field(call, "arguments")
	var out []string
	if s, ok := kit.PlainString(p, kit.KwargValue(p, args, "strategy")); ok && strings.HasPrefix(s, "ddp") {
		out = append(out, "its strategy \""+s+"\" uses NCCL on GPUs")
	}
	if v := kit.KwargValue(p, args, "precision"); v != nil {
		s, _ := kit.PlainString(p, v)
		if s == "16-mixed" || s == "16" || s == "16-true" || p.Text(v) == "16" {
			out = append(out, "its precision "+p.Text(v)+" is fp16 (TPUs compute in bf16: \"bf16-mixed\")")
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}
