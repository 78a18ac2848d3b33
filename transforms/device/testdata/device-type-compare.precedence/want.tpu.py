import torch

if not x.device.type == "tpu":
    pass
use = cond and device.type != "tpu"
use2 = device.type != "tpu" and cond
pick = (lambda d: d == "cuda")
ok = a or "tpu" not in str(device)
y = 1 if device.type == "tpu" else 2
flags = [device.type == "tpu", "tpu" in device]
