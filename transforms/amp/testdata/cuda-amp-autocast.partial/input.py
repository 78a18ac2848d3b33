import functools

import torch

amp_ctx = functools.partial(torch.cuda.amp.autocast, dtype=torch.bfloat16)  # want "PAM001: .*through functools.partial"
bare = functools.partial(torch.cuda.amp.autocast)  # want "PAM001: .*through functools.partial"
other = functools.partial(print, "cuda")


def step(model, x):
    with amp_ctx():
        return model(x)
