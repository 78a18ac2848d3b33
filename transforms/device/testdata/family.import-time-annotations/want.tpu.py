from __future__ import annotations

import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def f(x: torch.Tensor, device: str = "tpu") -> torch.device("tpu"):
    return x.to(device)


class Config:
    dev: torch.device("tpu") = None
    home = DEVICE
