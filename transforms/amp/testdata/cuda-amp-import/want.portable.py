import torch
from torch.amp import GradScaler, autocast, custom_fwd

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


class Fn(torch.autograd.Function):
    @staticmethod
    @custom_fwd(device_type=DEVICE.type)
    def forward(ctx, x):
        return x


def train(model, x):
    scaler = GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
    with autocast(DEVICE.type, dtype=torch.float16, enabled=DEVICE.type != "cpu"):
        loss = model(x)
    scaler.scale(loss).backward()
