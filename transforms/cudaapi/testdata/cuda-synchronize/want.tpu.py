import time

import torch


def bench(fn):
    torch.tpu.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.tpu.synchronize(device)
    return time.perf_counter() - t0


done = torch.tpu.synchronize() or True
