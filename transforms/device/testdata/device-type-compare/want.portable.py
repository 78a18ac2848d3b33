import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

if x.device.type != "cpu":
    torch.cuda.synchronize()
pin = device_type != 'cpu'
use_amp = "cpu" not in args.device
cpu_only = "cpu" in str(device)
other = "cpu" == dev
if self.device.type == "cpu":
    pass
flag = cfg["device"] != "cpu"
assert cfg.device == DEVICE.type
assert x.device.type == DEVICE.type, "expected the model on the GPU"
