import torch

if x.device.type != "cpu":
    torch.cuda.synchronize()
pin = device_type != 'cpu'
use_amp = "cpu" not in args.device
cpu_only = "cpu" in str(device)
other = "cpu" == dev
if self.device.type == "cpu":
    pass
flag = cfg["device"] != "cpu"
