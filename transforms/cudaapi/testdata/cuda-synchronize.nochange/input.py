import torch

if torch.accelerator.is_available():
    torch.accelerator.synchronize()
stream.synchronize()
