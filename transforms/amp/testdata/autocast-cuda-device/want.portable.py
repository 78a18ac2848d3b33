import torch
from torch import autocast

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

with torch.autocast(DEVICE.type):
    y = model(x)
with torch.autocast(device_type=DEVICE.type, dtype=torch.float16):
    y = model(x)
with autocast(DEVICE.type, torch.bfloat16):
    y = model(x)
with torch.amp.autocast(DEVICE.type, enabled=False):
    y = model(x)
