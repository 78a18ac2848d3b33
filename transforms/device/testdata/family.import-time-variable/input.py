import os

import torch

if os.environ.get("NO_DEFAULT") is None:
    device_name = "cuda"
    DEFAULT = torch.device(device_name)

device = "cuda"
label = "cuda"


def run(x):
    return x.to(device)


print(label)
