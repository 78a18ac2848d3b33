from __future__ import annotations

import torch


def f(x: torch.Tensor, device: str = "cuda") -> torch.device("cuda"):
    return x.to(device)


class Config:
    dev: torch.device("cuda") = None
    home = torch.device("cuda")
