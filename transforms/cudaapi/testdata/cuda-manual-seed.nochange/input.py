import torch

torch.manual_seed(0)
rng.manual_seed(1)
