import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x


model = Net()
# The opt-in PCM002 would compile `model`, so the optimizer is reported now:
# a run with --unsafe-fixes must not find new work on its second pass.
opt = torch.optim.Adam(model.parameters())  # want "PDX005: Adam under torch.compile"


if __name__ == "__main__":
    opt.step()
