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
