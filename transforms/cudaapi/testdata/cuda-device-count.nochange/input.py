import torch

n = torch.accelerator.device_count()
m = len(devices)  # torch.cuda.device_count()
