import time

import torch


def bench(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize(device)
    torch.cuda.synchronize(device=device)
    return time.perf_counter() - t0


done = torch.cuda.synchronize() or True
