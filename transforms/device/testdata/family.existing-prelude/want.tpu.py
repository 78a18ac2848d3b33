import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

x = torch.ones(3, device=DEVICE)
