import torch
from torch import cuda


@torch.cuda.amp.autocast()
def forward(model, x):
    return model(x)


def train(model, x, use_amp):
    with torch.cuda.amp.autocast(enabled=use_amp):
        loss = model(x)
    with cuda.amp.autocast(dtype=torch.float16, cache_enabled=False):
        out = model(x)
    with torch.cuda.amp.autocast(
        enabled=True,
    ):
        pass
    return loss, out
