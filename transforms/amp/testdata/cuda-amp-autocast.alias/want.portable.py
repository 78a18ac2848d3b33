import torch as t
import torch.cuda.amp as A
from torch.cuda.amp import autocast_mode as m
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def train(model, x):
    with torch.amp.autocast(DEVICE.type, enabled=DEVICE.type != "cpu"):
        loss = model(x)
    with m.autocast(enabled=False):
        out = model(x)
    with torch.amp.autocast(DEVICE.type, enabled=DEVICE.type != "cpu"):
        out = model(out)
    return loss, out
