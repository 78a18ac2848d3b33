package hf

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var quantizationExample = rule.Example{
	Before: `from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)
`,
}

// bnbKeywords are from_pretrained keywords that select bitsandbytes.
var bnbKeywords = []string{"load_in_8bit", "load_in_4bit"}

// Quantization reports bitsandbytes quantization in from_pretrained.
var Quantization = &rule.Rule{
	Code:   "PHF003",
	Name:   "hf-bnb-quantization",
	Family: Family,
	Safety: rule.DisplayOnly,
	// It reports only keywords of a from_pretrained call: the call, and the
	// keyword (or the config's constructor call) inside it.
	Needles: []string{`\q\bfrom_pretrained\( & \q\bload_in_8bit\=`, `\q\bfrom_pretrained\( & \q\bload_in_4bit\=`,
		`\q\bfrom_pretrained\( & \bBitsAndBytesConfig\(`},
	Example: quantizationExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "bitsandbytes quantization when loading a Hugging Face model",
		What: "Reports `from_pretrained(..., load_in_8bit=True)`, `load_in_4bit=True` and " +
			"`quantization_config=BitsAndBytesConfig(...)`.",
		Why: "bitsandbytes ships CUDA kernels only, so the load fails on a TPU host; int8/torchao has no turnkey " +
			"TorchTPU path either. Load the weights in bf16 (`torch_dtype=torch.bfloat16`), " +
			"which the MXU runs natively, and check that the model fits the chip's HBM.",
		Safety: "Diagnostic only: dropping quantization changes memory use and numerics.",
	}, quantizationExample),
	Run: runQuantization,
}

func runQuantization(p *rule.Pass) {
	const advice = "bitsandbytes quantization is CUDA-only; on TPU load in bf16 (torch_dtype=torch.bfloat16) and drop it"
	kit.Calls(p, func(call *ts.Node) {
		if lastName(p, call) != "from_pretrained" {
			return
		}
		args := kit.Args(call)
		for _, k := range bnbKeywords {
			if kw := kit.Kwarg(p, args, k); kw != nil {
				if b, lit := kit.Bool(kw.ChildByFieldName("value")); lit && !b {
					continue
				}
				p.Report(kit.Finding(kw, k+": "+advice, nil))
			}
		}
		if v := kit.KwargValue(p, args, "quantization_config"); v != nil && v.Type() == "call" && lastName(p, v) == "BitsAndBytesConfig" {
			p.Report(kit.Finding(v, "BitsAndBytesConfig: "+advice, nil))
		}
	})
}
