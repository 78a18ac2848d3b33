import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x


def main(device):
    model = Net().to(device)
    model = torch.compile(model, backend="tpu", dynamic=False)  # already compiled: never wrapped twice
    ema = Net()
    ema.compile()  # compiled in place
    pair = (Net(), Net())  # not a plain assignment of one model
    return model, ema, pair


def helper():
    net = torch.compile(Net(), backend="tpu", dynamic=False)
    return net
