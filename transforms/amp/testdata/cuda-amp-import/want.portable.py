import torch
from torch.amp import GradScaler, autocast, custom_fwd

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


class Fn(torch.autograd.Function):
    @staticmethod
    @custom_fwd(device_type=DEVICE.type)
    def forward(ctx, x):
        return x


def train(model, x):
    scaler = GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
    with autocast(DEVICE.type, dtype=torch.float16):
        loss = model(x)
    scaler.scale(loss).backward()
