"""Train on "cuda" (this docstring must not change)."""
import os

import torch
from torch import nn

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


# move everything to "cuda" -- a comment, untouched
x = torch.zeros(4, device=DEVICE)
y = torch.randn(2, 3, device=device_at(0), dtype=torch.float32)
g = torch.Generator(device=DEVICE)
model = nn.Linear(3, 3).to(DEVICE)
model.to("cuda:1", non_blocking=True)
z = x.new_zeros(3, device=DEVICE)
dev = DEVICE
dev0 = device_at(0)
devr = device_at(local_rank)
devi = device_at(local_rank)
devj = torch.device("cuda", 1)
devc = DEVICE
state = torch.load("ckpt.pt", map_location=DEVICE)
state2 = torch.load("ckpt.pt", DEVICE)
with DEVICE:
    w = torch.empty(2)
torch.set_default_device(DEVICE)
helper(batch, device="tpu")
t = x.to(device_at(args.gpu))
