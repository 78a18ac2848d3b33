import torch

if not x.device.type == "cuda":
    pass
use = cond and device.type != "cuda"
use2 = device.type != "cuda" and cond
pick = (lambda d: d == "cuda")
ok = a or "cuda" not in str(device)
y = 1 if device.type == "cuda" else 2
flags = [device.type == "cuda", "cuda" in device]
