import torch

with torch.autocast(device_type):
    pass
with torch.autocast("cpu", dtype=torch.bfloat16):
    pass
with torch.autocast(DEVICE.type):
    pass
with other.autocast("cuda"):
    pass
