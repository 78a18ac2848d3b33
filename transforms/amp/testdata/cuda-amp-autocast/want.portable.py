import torch
from torch import cuda

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


@torch.amp.autocast(DEVICE.type)
def forward(model, x):
    return model(x)


def train(model, x, use_amp):
    with torch.amp.autocast(DEVICE.type, enabled=use_amp):
        loss = model(x)
    with torch.amp.autocast(DEVICE.type, dtype=torch.float16, cache_enabled=False):
        out = model(x)
    with torch.amp.autocast(
        DEVICE.type, enabled=True,
    ):
        pass
    return loss, out
