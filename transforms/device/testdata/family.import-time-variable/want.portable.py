import os

import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

if os.environ.get("NO_DEFAULT") is None:
    device_name = DEVICE.type
    DEFAULT = torch.device(device_name)

device = DEVICE.type
label = "cuda"


def run(x):
    return x.to(device)


print(label)
