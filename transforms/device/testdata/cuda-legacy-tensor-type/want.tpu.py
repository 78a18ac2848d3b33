import torch
from torch import cuda

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

empty = torch.empty(0, dtype=torch.float32, device=DEVICE)
buf = torch.empty(4, 8, dtype=torch.float32, device=DEVICE)
ids = torch.tensor([1, 2, 3], dtype=torch.int64, device=DEVICE)
mask = torch.tensor((True, False), dtype=torch.bool, device=DEVICE)
amb = torch.cuda.FloatTensor(n)
y = x.to(DEVICE, torch.float16)
z = x.to(DEVICE, torch.float64)
if isinstance(t, torch.cuda.FloatTensor):
    pass
if t.type() == "torch.cuda.FloatTensor":
    pass
torch.set_default_tensor_type(torch.cuda.FloatTensor)
Tensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor
print(f"{torch.tensor([1], dtype=torch.int32, device=DEVICE)}")
