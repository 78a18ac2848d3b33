import torch

if name == "cuda":
    pass
ok = "cuda" in message
chained = a == device == "cuda"
x = device == "cuda:0"
y = DEVICE.type == "cuda"
z = ACCEL_DEVICE.type != "cuda"
w = device == "cpu"
# device == "cuda"
