import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


def accel_device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE (a TPU process sees its one chip as tpu:0)."""
    return torch.device(DEVICE.type, index) if DEVICE.type == "cuda" else DEVICE


def device_at(index):
    return "somewhere else"


x = torch.zeros(2, device=accel_device_at(rank))
y = device_at(3)
