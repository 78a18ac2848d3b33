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


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    # move everything to "cuda" -- a comment, untouched
    x = torch.zeros(4, device="tpu")
    y = torch.randn(2, 3, device='tpu:0', dtype=torch.float32)
    g = torch.Generator(device="tpu")
    model = nn.Linear(3, 3).to("tpu")
    model.to("cuda:1", non_blocking=True)
    z = x.new_zeros(3, device="tpu")
    dev = torch.device("tpu")
    dev0 = torch.device("tpu:0")
    devr = torch.device("tpu")
    devi = torch.device("tpu")
    devj = torch.device("cuda", 1)
    devc = DEVICE
    state = torch.load("ckpt.pt", map_location="tpu")
    state2 = torch.load("ckpt.pt", "tpu")
    with torch.device("tpu"):
        w = torch.empty(2)
    torch.set_default_device("tpu")
    helper(batch, device="tpu")
    t = x.to("tpu")
