import time

import torch


def bench(fn):
    torch.accelerator.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.accelerator.synchronize(device)
    torch.accelerator.synchronize(device)
    return time.perf_counter() - t0


done = torch.accelerator.synchronize() or True
