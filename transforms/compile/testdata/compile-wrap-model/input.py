import torch
import torchvision
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        return x + 1


class Net(Block):
    def forward(self, x):
        return super().forward(x) * 2


class Config:
    pass


def main(device):
    model = Net().to(device)  # want "PCM002: `model` is an uncompiled nn.Module"
    backbone = torchvision.models.resnet18(weights=None).eval()  # want "PCM002: `backbone`"
    cfg = Config()
    with torch.inference_mode():
        return model(torch.ones(2)), backbone, cfg


if __name__ == "__main__":
    main("cpu")
