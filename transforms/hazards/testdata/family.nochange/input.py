"""Device-neutral code: no rule of the family may report or change anything.

Mentions of torch.cuda.Event, is_cuda, CUDA_VISIBLE_DEVICES and
torch.backends.cudnn.benchmark in this docstring are prose.
"""
import os
import time

import torch

DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


def timed(model, x):
    # torch.cuda.synchronize(); start.elapsed_time(end)
    torch.accelerator.synchronize()
    t0 = time.perf_counter()
    y = model(x.to(DEVICE))
    torch.accelerator.synchronize()
    return y, time.perf_counter() - t0


def on_accelerator(x):
    return x.device.type != "cpu"


def opt(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-3)  # no compile in this module


os.environ["TPU_LAUNCH_BLOCKING"] = "0"
msg = "set CUDA_LAUNCH_BLOCKING to debug"
