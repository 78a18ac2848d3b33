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
