import torch

if x.device.type == "tpu":
    torch.cuda.synchronize()
pin = device_type == 'tpu'
use_amp = "tpu" in args.device
cpu_only = "tpu" not in str(device)
other = "tpu" != dev
if self.device.type != "tpu":
    pass
flag = cfg["device"] == "tpu"
assert cfg.device == "tpu"
assert x.device.type == "tpu", "expected the model on the GPU"
