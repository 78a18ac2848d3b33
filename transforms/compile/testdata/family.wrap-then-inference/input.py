import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x * 2


model = Net()  # want "PCM002: `model` is an uncompiled nn.Module"


@torch.inference_mode()
def predict(x):
    return model(x)


with torch.inference_mode(flag):  # want "PCM003: .*once PCM002 compiles.*computed"
    predict(torch.ones(1))


if __name__ == "__main__":
    print(predict(torch.ones(2)))
