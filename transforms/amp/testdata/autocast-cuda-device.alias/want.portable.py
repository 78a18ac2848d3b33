import torch as t
from torch import autocast as ac
from torch.amp import autocast_mode
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
    with ac(DEVICE.type, enabled=DEVICE.type != "cpu"):
        loss = model(x)
    with t.amp.autocast(device_type=DEVICE.type, enabled=DEVICE.type != "cpu"):
        out = model(x)
    with autocast_mode.autocast(DEVICE.type, enabled=False):
        out = model(out)
    return loss, out
