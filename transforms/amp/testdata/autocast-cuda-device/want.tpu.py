import torch
from torch import autocast

with torch.autocast("tpu", dtype=torch.bfloat16):
    y = model(x)
with torch.autocast(device_type="cuda", dtype=torch.float16):
    y = model(x)
with autocast('tpu', torch.bfloat16):
    y = model(x)
with torch.amp.autocast("tpu", enabled=False, dtype=torch.bfloat16):
    y = model(x)
