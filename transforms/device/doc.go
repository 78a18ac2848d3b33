// Package device holds the rules that rewrite how code names a CUDA device:
// device strings ("cuda", "cuda:N", f"cuda:{rank}") where they name a device,
// x.cuda() calls, comparisons against "cuda", and device defaults in argparse
// options, config dicts, dataclass fields and parameters.
//
// Targets: portable rewrites to the module-level DEVICE value (see
// kit.DevicePrelude: torch.accelerator's current accelerator, else the
// CPU), so the code still runs on CUDA and on the CPU; tpu rewrites to the
// literal TorchTPU device "tpu" (one chip per process, seen as tpu:0).
package device

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name of these rules.
const Family = "device"

// Rules is the device family, in registry order.
var Rules = []*rule.Rule{CudaDeviceString, CudaMethod, DeviceTypeCompare, CudaDeviceDefault, LegacyTensorType, CudaDeviceVariable, DeviceTypeList}
