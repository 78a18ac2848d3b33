package hf

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var trainingArgsExample = rule.Example{
	Before: `from transformers import TrainingArguments

args = TrainingArguments(output_dir="out", fp16=True)
`,
	Portable: `from transformers import TrainingArguments
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

args = TrainingArguments(output_dir="out", fp16=DEVICE.type != "tpu", bf16=DEVICE.type == "tpu")
`,
	TPU: `from transformers import TrainingArguments

args = TrainingArguments(output_dir="out", bf16=True)
`,
}

// TrainingArgsFP16 turns fp16 mixed precision into bf16 on TPU.
var TrainingArgsFP16 = &rule.Rule{
	Code:   "PHF004",
	Name:   "hf-training-args-fp16",
	Family: Family,
	Safety: rule.Safe,
	// A finding is the fp16 keyword argument (kit.Kwarg) of such a call: a
	// whole identifier in code, then its "=" (`\q`: code, never a string
	// literal).
	Needles: []string{`\q\bTrainingArguments\( & \q\bfp16\=`, `\q\bSeq2SeqTrainingArguments\( & \q\bfp16\=`},
	Example: trainingArgsExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "TrainingArguments(fp16=True): fp16 mixed precision instead of bf16",
		What: "Rewrites `fp16=True` in `TrainingArguments(...)` / `Seq2SeqTrainingArguments(...)` that do not also " +
			"pass `bf16=`: the tpu target gets `bf16=True`; the portable target gets `fp16=DEVICE.type != \"tpu\", " +
			"bf16=DEVICE.type == \"tpu\"`, so CUDA keeps fp16 with its loss scaling.",
		Why: "The TPU path for mixed precision is bf16: the MXU takes bf16 and accumulates in f32, bf16 needs no " +
			"loss scaling, and a GradScaler on \"tpu\" is unconfirmed. transformers treats " +
			"bf16 as always supported on TorchTPU.",
		Safety: "Safe for the portable target, whose CUDA and CPU runs keep their settings. Unsafe for the tpu " +
			"target: bf16 has fewer mantissa bits than fp16, so losses and metrics can differ slightly.",
	}, trainingArgsExample),
	Run: runTrainingArgsFP16,
}

func runTrainingArgsFP16(p *rule.Pass) {
	dev := kit.NewDev(p)
	kit.Calls(p, func(call *ts.Node) {
		switch lastName(p, call) {
		case "TrainingArguments", "Seq2SeqTrainingArguments":
		default:
			return
		}
		args := kit.Args(call)
		kw := kit.Kwarg(p, args, "fp16")
		if kw == nil || kit.Kwarg(p, args, "bf16") != nil {
			return
		}
		v := kw.ChildByFieldName("value")
		if b, lit := kit.Bool(v); !lit || !b {
			return
		}
		const msg = "fp16 mixed precision: the TPU path is bf16 (no loss scaling needed)"
		if p.Target == rule.TPU {
			p.Report(kit.Finding(kw, msg, &rule.Fix{Title: "Train in bf16", Safety: rule.Unsafe,
				Edits: []rule.Edit{{Start: kit.Start(kw), End: kit.End(kw), New: "bf16=True"}}}))
			return
		}
		sep := ", "
		if ls := kit.LineStart(p.Src, kit.Start(kw)); strings.TrimSpace(string(p.Src[ls:kit.Start(kw)])) == "" {
			sep = ",\n" + kit.LineIndent(p.Src, kit.Start(kw)) // one argument per line
		}
		p.Report(kit.Finding(kw, msg+"; choose it by DEVICE.type so CUDA keeps fp16", dev.Fix("Train in bf16 on TPU", rule.Safe,
			rule.Edit{Start: kit.Start(v), End: kit.End(v), New: dev.Type() + ` != "tpu"` + sep + `bf16=` + dev.Type() + ` == "tpu"`})))
	})
}
