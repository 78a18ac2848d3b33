import torch

ok = torch.backends.mps.is_available()
