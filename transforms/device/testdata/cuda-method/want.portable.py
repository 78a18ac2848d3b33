import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

model = Net().to(DEVICE)
x = batch.to(DEVICE, non_blocking=True)
y = t.to(torch.device(DEVICE.type, 0))
z = t.to(torch.device(DEVICE.type, args.gpu), non_blocking=True)
w = t.to(device=torch.device(DEVICE.type, local_rank))
v = t.to(torch.device(DEVICE.type, 3))
u = t.to(device)
s = t.to(DEVICE, memory_format=torch.channels_last)
inputs = [b.to(DEVICE) for b in batch]
out = model(
    x.to(DEVICE),
)
