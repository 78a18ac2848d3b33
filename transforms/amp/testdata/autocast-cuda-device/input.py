import torch
from torch import autocast

with torch.autocast("cuda"):
    y = model(x)
with torch.autocast(device_type="cuda", dtype=torch.float16):
    y = model(x)
with autocast('cuda', torch.bfloat16):
    y = model(x)
with torch.amp.autocast("cuda", enabled=False):
    y = model(x)
