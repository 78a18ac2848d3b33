import torch
from torch.cuda import current_device

idx = torch.tpu.current_device()
other = torch.tpu.current_device()
