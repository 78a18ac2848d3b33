import os

import torch
from torch.utils.data import DataLoader

local_rank = int(os.environ["LOCAL_RANK"])
device_type = "cuda"
dev_str = device_type
target = "tpu"


def setup(rank, data):
    name = "tpu"
    pinned = "tpu"
    x = torch.zeros(3, device=name)
    torch.set_default_device(target)
    loader = DataLoader(data, pin_memory=True, pin_memory_device=pinned)
    return x.to(dev_str), loader


def logged():
    where = "cuda"  # want "PDV006: .*`where` is also used otherwise \\(line 24\\)"
    y = torch.ones(2, device=where)
    print("running on", where)
    return y
