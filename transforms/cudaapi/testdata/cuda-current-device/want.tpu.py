import torch
from torch.cuda import current_device

idx = torch.accelerator.current_device_index()
other = torch.accelerator.current_device_index()
