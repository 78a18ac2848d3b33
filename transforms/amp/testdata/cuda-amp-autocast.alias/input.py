import torch as t
import torch.cuda.amp as A
from torch.cuda.amp import autocast_mode as m


def train(model, x):
    with A.autocast():
        loss = model(x)
    with m.autocast(enabled=False):
        out = model(x)
    with t.cuda.amp.autocast():
        out = model(out)
    return loss, out
