import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


model = Net()  # want "PCM002: `model` is an uncompiled nn.Module"
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.ones(2, 4)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
