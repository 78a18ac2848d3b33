import torch

DEVICE = "cuda"


def run(DEVICE=None):
    return torch.zeros(2, device="cuda").cuda()
