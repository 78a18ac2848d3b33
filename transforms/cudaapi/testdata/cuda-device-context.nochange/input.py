import torch

with torch.device("cpu"):
    x = torch.zeros(1)
n = torch.cuda.device_count()
d = torch.cuda.device
