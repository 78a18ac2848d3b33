import time

import torch


def bench(fn):
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()
    t0 = time.perf_counter()
    fn()
    if torch.accelerator.is_available():
        torch.accelerator.synchronize(device)
    if torch.accelerator.is_available():
        torch.accelerator.synchronize(device)
    return time.perf_counter() - t0


done = torch.accelerator.synchronize() or True
