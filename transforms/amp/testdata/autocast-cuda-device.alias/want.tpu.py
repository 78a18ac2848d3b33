import torch as t
from torch import autocast as ac
from torch.amp import autocast_mode
import torch


def train(model, x):
    with ac("tpu", dtype=torch.bfloat16):
        loss = model(x)
    with t.amp.autocast(device_type="tpu", dtype=torch.bfloat16):
        out = model(x)
    with autocast_mode.autocast('tpu', enabled=False, dtype=torch.bfloat16):
        out = model(out)
    return loss, out
