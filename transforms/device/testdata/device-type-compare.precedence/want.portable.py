import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

if not (DEVICE.type != "cpu" and x.device.type == DEVICE.type):
    pass
use = cond and (DEVICE.type == "cpu" or device.type != DEVICE.type)
use2 = (DEVICE.type == "cpu" or device.type != DEVICE.type) and cond
pick = (lambda d: d == "cuda")
ok = a or (DEVICE.type == "cpu" or DEVICE.type not in str(device))
y = 1 if DEVICE.type != "cpu" and device.type == DEVICE.type else 2
flags = [DEVICE.type != "cpu" and device.type == DEVICE.type, DEVICE.type != "cpu" and DEVICE.type in device]
