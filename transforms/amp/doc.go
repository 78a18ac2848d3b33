// Package amp holds the automatic-mixed-precision rules: the deprecated
// torch.cuda.amp.autocast and GradScaler (any spelling, their imports
// included) and torch.autocast/torch.amp calls that name "cuda".
//
// Targets: portable uses torch.amp with DEVICE.type, keeping the dtype the
// device defaults to and enabling the loss scaler only on CUDA (where fp16 is
// the autocast default); tpu uses torch.amp with "tpu" and bfloat16, the TPU's
// native type, and disables the scaler, which bf16 does not need.
package amp

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name of these rules.
const Family = "amp"

// Rules is the amp family, in registry order.
var Rules = []*rule.Rule{CudaAutocast, AutocastCuda, GradScaler, CudaAmpImport}
