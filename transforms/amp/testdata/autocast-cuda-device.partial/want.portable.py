from functools import partial

import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

autocast = partial(torch.autocast, DEVICE.type, dtype=torch.bfloat16, enabled=DEVICE.type != "cpu")
autocast_kw = partial(torch.autocast, device_type=DEVICE.type, enabled=DEVICE.type != "cpu")
keep = partial(torch.autocast, "cpu")


def step(model, x):
    with autocast():
        return model(x)
