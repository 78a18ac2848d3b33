import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE (a TPU process sees its one chip as tpu:0)."""
    return torch.device(DEVICE.type, index) if DEVICE.type == "cuda" else DEVICE


name = f"cuda:{rank} is busy"
other = torch.device("cpu", 0)
y = x.to(device_at(rank))
