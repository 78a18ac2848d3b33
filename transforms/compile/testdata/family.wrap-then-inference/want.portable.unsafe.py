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
    def forward(self, x):
        return x * 2


model = torch.compile(Net(), backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))  # want "PCM002: `model` is an uncompiled nn.Module"


@torch.no_grad()
def predict(x):
    return model(x)


with torch.inference_mode(flag):  # want "PCM003: .*once PCM002 compiles.*computed"
    predict(torch.ones(1))


if __name__ == "__main__":
    print(predict(torch.ones(2)))
