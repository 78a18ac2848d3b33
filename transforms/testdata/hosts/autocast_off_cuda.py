# hosts: cpu mps
# The CUDA autocast disables itself where CUDA is missing: the model keeps
# computing in fp32 on a CPU-only host and on a Mac (it must not switch to
# CPU bf16 autocast).
import torch

torch.manual_seed(0)
lin = torch.nn.Linear(4, 4)
x = torch.randn(2, 4)

with torch.cuda.amp.autocast():
    y = lin(x)
print("cuda.amp.autocast", y.dtype, y.sum().item())

with torch.autocast(device_type="cuda"):
    z = lin(x)
print("autocast(device_type=cuda)", z.dtype, z.sum().item())


@torch.cuda.amp.autocast(enabled=True)
def forward(inp):
    return lin(inp)


print("decorator", forward(x).dtype)

scaler = torch.cuda.amp.GradScaler()
print("scaler enabled", scaler.is_enabled())
