import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
ACCEL_DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

DEVICE = ACCEL_DEVICE.type


def run(DEVICE=None):
    return torch.zeros(2, device=ACCEL_DEVICE).to(ACCEL_DEVICE)
