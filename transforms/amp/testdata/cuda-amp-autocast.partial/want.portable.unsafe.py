import functools

import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

amp_ctx = functools.partial(torch.amp.autocast, DEVICE.type, dtype=torch.bfloat16, enabled=DEVICE.type != "cpu")  # want "PAM001: .*through functools.partial"
bare = functools.partial(torch.amp.autocast, DEVICE.type, enabled=DEVICE.type != "cpu")  # want "PAM001: .*through functools.partial"
other = functools.partial(print, "cuda")


def step(model, x):
    with amp_ctx():
        return model(x)
