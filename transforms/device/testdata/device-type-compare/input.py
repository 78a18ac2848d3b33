import torch

if x.device.type == "cuda":
    torch.cuda.synchronize()
pin = device_type == 'cuda'
use_amp = "cuda" in args.device
cpu_only = "cuda" not in str(device)
other = "cuda" != dev
if self.device.type != "cuda":
    pass
flag = cfg["device"] == "cuda"
assert cfg.device == "cuda"
assert x.device.type == "cuda", "expected the model on the GPU"
