import torch
from torch.cuda import current_device

idx = torch.cuda.current_device()
other = current_device()
