import torch


def device_at(index):
    return "somewhere else"


x = torch.zeros(2, device="tpu")
y = device_at(3)
