import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

if DEVICE.type != "cpu" and x.device.type == DEVICE.type:
    torch.cuda.synchronize()
pin = DEVICE.type != "cpu" and device_type == DEVICE.type
use_amp = DEVICE.type != "cpu" and DEVICE.type in args.device
cpu_only = DEVICE.type == "cpu" or DEVICE.type not in str(device)
other = DEVICE.type == "cpu" or DEVICE.type != dev
if DEVICE.type == "cpu" or self.device.type != DEVICE.type:
    pass
flag = DEVICE.type != "cpu" and cfg["device"] == DEVICE.type
assert cfg.device == DEVICE.type
assert x.device.type == DEVICE.type, "expected the model on the GPU"
