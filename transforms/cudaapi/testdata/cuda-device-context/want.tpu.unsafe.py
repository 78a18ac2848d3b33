import torch
from torch import cuda
import contextlib


def fill(local_rank, i):
    with contextlib.nullcontext():
        a = torch.zeros(4)
    with contextlib.nullcontext() as d, open("log") as fh:
        fh.write(str(d))
    ctx = contextlib.nullcontext()
    with ctx:
        pass
    return [contextlib.nullcontext()]
