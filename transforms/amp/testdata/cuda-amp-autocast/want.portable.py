import torch
from torch import cuda

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


@torch.amp.autocast(DEVICE.type, enabled=DEVICE.type != "cpu")
def forward(model, x):
    return model(x)


def train(model, x, use_amp):
    with torch.amp.autocast(DEVICE.type, enabled=use_amp and DEVICE.type != "cpu"):
        loss = model(x)
    with torch.amp.autocast(DEVICE.type, dtype=torch.float16, cache_enabled=False, enabled=DEVICE.type != "cpu"):
        out = model(x)
    with torch.amp.autocast(
        DEVICE.type, enabled=DEVICE.type != "cpu",
    ):
        pass
    return loss, out
