import torch
from torch import nn

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


model = torch.compile(Net(), backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))  # want "PCM002: `model` is an uncompiled nn.Module"
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.ones(2, 4)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
