import torch

idx = torch.accelerator.current_device_index()
cur = obj.current_device()
