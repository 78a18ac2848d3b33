from functools import partial

import torch

autocast = partial(torch.autocast, "tpu", dtype=torch.bfloat16)
autocast_kw = partial(torch.autocast, device_type="tpu", dtype=torch.bfloat16)
keep = partial(torch.autocast, "cpu")


def step(model, x):
    with autocast():
        return model(x)
