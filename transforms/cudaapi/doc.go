// Package cudaapi holds the rules that rewrite torch.cuda.* calls (any
// spelling: torch.cuda.x, `from torch import cuda`, `from torch.cuda import
// x`, `import torch.cuda as tc`) into what works without CUDA.
//
// Targets: portable rewrites to torch.accelerator (PyTorch 2.6+) and
// torch.get_device_module(DEVICE), guarding what may be missing; tpu rewrites
// to what TorchTPU 0.2.0 lets user code call: torch.accelerator wherever
// TorchTPU defers to it (its torch.tpu.is_available, device_count,
// current_device, set_device, synchronize, get_rng_state, ... are internal
// and raise RuntimeError for user code), and torch.tpu only for its public,
// non-internal names (get_device_name, get_device_properties,
// set_rng_state). Memory statistics go through torch.accelerator.memory,
// guarded: TorchTPU has none of its own. TestTorchNamesExist (transforms/)
// checks every introduced name against the installed packages.
package cudaapi

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name of these rules.
const Family = "cuda-api"

// Rules is the cuda-api family, in registry order.
var Rules = []*rule.Rule{IsAvailable, DeviceCount, CurrentDevice, SetDevice, Synchronize, ManualSeed, DeviceInfo,
	Bf16Supported, MemoryAPI, RngState, DeviceContext, CudaOnlyGuard, CudaOnlyTest, CudaCapability}
