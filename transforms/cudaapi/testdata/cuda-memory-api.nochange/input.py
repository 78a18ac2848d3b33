import torch

used = torch.accelerator.memory.memory_allocated()
