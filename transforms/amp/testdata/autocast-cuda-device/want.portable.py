import torch
from torch import autocast

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

with torch.autocast(DEVICE.type, enabled=DEVICE.type != "cpu"):
    y = model(x)
with torch.autocast(device_type=DEVICE.type, dtype=torch.float16, enabled=DEVICE.type != "cpu"):
    y = model(x)
with autocast(DEVICE.type, torch.bfloat16, enabled=DEVICE.type != "cpu"):
    y = model(x)
with torch.amp.autocast(DEVICE.type, enabled=False):
    y = model(x)
