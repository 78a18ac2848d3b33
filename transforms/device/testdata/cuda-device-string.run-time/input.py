"""Train on "cuda" (this docstring must not change)."""
import os

import torch
from torch import nn


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    # move everything to "cuda" -- a comment, untouched
    x = torch.zeros(4, device="cuda")
    y = torch.randn(2, 3, device='cuda:0', dtype=torch.float32)
    g = torch.Generator(device="cuda")
    model = nn.Linear(3, 3).to("cuda")
    model.to("cuda:1", non_blocking=True)
    z = x.new_zeros(3, device="cuda")
    dev = torch.device("cuda")
    dev0 = torch.device("cuda:0")
    devr = torch.device(f"cuda:{local_rank}")
    devi = torch.device("cuda", local_rank)
    devj = torch.device("cuda", 1)
    devc = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    state = torch.load("ckpt.pt", map_location="cuda")
    state2 = torch.load("ckpt.pt", "cuda")
    with torch.device("cuda"):
        w = torch.empty(2)
    torch.set_default_device("cuda")
    helper(batch, device="cuda")
    t = x.to(f"cuda:{args.gpu}")
