from functools import partial

import torch

autocast = partial(torch.autocast, "cuda", dtype=torch.bfloat16)
autocast_kw = partial(torch.autocast, device_type="cuda")
keep = partial(torch.autocast, "cpu")


def step(model, x):
    with autocast():
        return model(x)
