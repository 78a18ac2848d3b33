import torch

a = torch.ones(3, device="tpu")
b = torch.ones(3)
try:
    a + b
except RuntimeError as e:
    print("refused", e)
print("scalar ok", (a + torch.tensor(2.0)).device.type)  # a 0-dim CPU tensor is allowed, as with CUDA
print("copy ok", a.copy_(b).device.type)
