import torch


def setup(device, local_rank):
    device = f"{device}:{local_rank}"
    if device.startswith("cuda:"):
        torch.cuda.set_device(device)
    name = "cuda_kernels"
    if name.startswith("cuda"):
        print(name)
    return device
