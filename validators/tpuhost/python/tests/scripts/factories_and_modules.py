"""Shapes of composite factories and module moves, as on a real TPU host."""
import torch
import torch.nn as nn
from torch.nn.utils import weight_norm

d = torch.device("tpu")
print("arange", tuple(torch.arange(0, 4, device=d).shape), torch.arange(5, device=d).sum().item())
print("eye", tuple(torch.eye(3, device=d).shape))
print("linspace", tuple(torch.linspace(0, 1, 5, device=d).shape))
m = weight_norm(nn.Linear(4, 4, bias=False)).to(d)
y = m(torch.ones(2, 4, device=d)).sum()
y.backward()
print("weight_norm", m.weight_g.device, m.weight_g.grad.device)
lin = nn.Linear(3, 3).to(d)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
lin(torch.ones(1, 3, device=d)).sum().backward()
opt.step()
print("step", lin.weight.device, isinstance(lin.weight, nn.Parameter))
with torch.autocast(device_type="tpu"):
    a = lin(torch.ones(2, 3, device=d))
    r = torch.ones(2, 3, device=d).reshape(3, 2)
print("autocast", a.dtype, tuple(r.shape), r.dtype)
x = torch.arange(4, device=d)
try:
    x.numpy()
    numpy_msg = "converted"
except TypeError as e:
    numpy_msg = str(e).split(".")[0]
print("host", x.tolist(), x.cpu().numpy().tolist(), numpy_msg)
