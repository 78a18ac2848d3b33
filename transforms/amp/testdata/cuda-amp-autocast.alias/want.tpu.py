import torch as t
import torch.cuda.amp as A
from torch.cuda.amp import autocast_mode as m
import torch


def train(model, x):
    with torch.amp.autocast("tpu", dtype=torch.bfloat16):
        loss = model(x)
    with m.autocast(enabled=False):
        out = model(x)
    with torch.amp.autocast("tpu", dtype=torch.bfloat16):
        out = model(out)
    return loss, out
