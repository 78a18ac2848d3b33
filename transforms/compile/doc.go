// Package compile holds the torch.compile rules (codes PCM…): TPU settings
// for existing torch.compile calls (backend="tpu", dynamic=False), an opt-in
// rule that compiles an uncompiled nn.Module model, and inference_mode →
// no_grad where a module compiles.
//
// For --target tpu the settings are literal. For --target portable they are
// chosen by the module's device value (DEVICE, defined once after the imports),
// so that CUDA and CPU runs keep exactly the settings they had: the backend
// stays "inductor" (or what the code passed) and dynamic stays None (or what
// the code passed) unless DEVICE.type == "tpu".
package compile

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name shown in rule listings.
const Family = "compile"

// Rules is the family in registry order.
var Rules = []*rule.Rule{
	TPUSettings,
	WrapModel,
	InferenceMode,
}
