import os

import torch
from torch.utils.data import DataLoader

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


local_rank = int(os.environ["LOCAL_RANK"])
device_type = "cuda"
dev_str = str(device_at(local_rank))
target = DEVICE.type


def setup(rank, data):
    name = str(device_at(rank))
    pinned = str(device_at(rank))
    x = torch.zeros(3, device=name)
    torch.set_default_device(target)
    loader = DataLoader(data, pin_memory=True, pin_memory_device=pinned)
    return x.to(dev_str), loader


def logged():
    where = "cuda"  # want "PDV006: .*`where` is also used otherwise \\(line 24\\)"
    y = torch.ones(2, device=where)
    print("running on", where)
    return y
