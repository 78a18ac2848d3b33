import torch
from torch import cuda


@torch.amp.autocast("tpu", dtype=torch.bfloat16)
def forward(model, x):
    return model(x)


def train(model, x, use_amp):
    with torch.amp.autocast("tpu", enabled=use_amp, dtype=torch.bfloat16):
        loss = model(x)
    with cuda.amp.autocast(dtype=torch.float16, cache_enabled=False):
        out = model(x)
    with torch.amp.autocast(
        "tpu", enabled=True, dtype=torch.bfloat16,
    ):
        pass
    return loss, out
