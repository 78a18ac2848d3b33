import torch
import torchvision
from torch import nn

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


class Block(nn.Module):
    def forward(self, x):
        return x + 1


class Net(Block):
    def forward(self, x):
        return super().forward(x) * 2


class Config:
    pass


def main(device):
    model = torch.compile(Net().to(device), backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))  # want "PCM002: `model` is an uncompiled nn.Module"
    backbone = torch.compile(torchvision.models.resnet18(weights=None).eval(), backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))  # want "PCM002: `backbone`"
    cfg = Config()
    with torch.no_grad():
        return model(torch.ones(2)), backbone, cfg


if __name__ == "__main__":
    main("cpu")
