// Package cudaapi holds the rules that rewrite torch.cuda.* calls (any
// spelling: torch.cuda.x, `from torch import cuda`, `from torch.cuda import
// x`, `import torch.cuda as tc`) per the rewrite table of torchtpu.md §4.
//
// Targets: portable rewrites to torch.accelerator (PyTorch 2.6+) and
// torch.get_device_module(DEVICE), guarding what may be missing; tpu rewrites
// to the literal torch.tpu module, guarding what TorchTPU may not register
// (torch.tpu exists only when TPU devices are present; memory statistics do
// not exist at all).
package cudaapi

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name of these rules.
const Family = "cuda-api"

// Rules is the cuda-api family, in registry order.
var Rules = []*rule.Rule{IsAvailable, DeviceCount, CurrentDevice, SetDevice, Synchronize, ManualSeed, DeviceInfo,
	Bf16Supported, MemoryAPI, RngState, DeviceContext}
