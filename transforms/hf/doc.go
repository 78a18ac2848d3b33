// Package hf holds the Hugging Face rules (codes PHF…): models loaded with
// from_pretrained(..., device_map=<a CUDA device or a placement strategy>)
// pipelines created with pipeline(..., device=0/"cuda"/"cuda:N"), bitsandbytes
// quantization (reported only), and fp16 TrainingArguments (bf16 on TPU).
//
// `device_map="tpu"` is unconfirmed by any documentation, so
// the rules never emit it: a model is loaded inside `with torch.device(...):`
// (the form TorchTPU's own Hugging Face utility uses, and which transformers
// turns into a one-device placement), and a pipeline gets a torch device.
package hf

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name shown in rule listings.
const Family = "hf"

// Rules is the family in registry order.
var Rules = []*rule.Rule{
	DeviceMap,
	PipelineDevice,
	Quantization,
	TrainingArgsFP16,
}
