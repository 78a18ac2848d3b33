import torch
from torch import cuda


def fill(local_rank, i):
    with torch.cuda.device(local_rank):
        a = torch.zeros(4)
    with cuda.device(i) as d, open("log") as fh:
        fh.write(str(d))
    ctx = torch.cuda.device(0)
    with ctx:
        pass
    return [torch.cuda.device(args.gpu)]
