import torch
from torch.cuda.amp import GradScaler, autocast, custom_fwd


class Fn(torch.autograd.Function):
    @staticmethod
    @custom_fwd
    def forward(ctx, x):
        return x


def train(model, x):
    scaler = GradScaler(enabled=True)
    with autocast(dtype=torch.float16):
        loss = model(x)
    scaler.scale(loss).backward()
