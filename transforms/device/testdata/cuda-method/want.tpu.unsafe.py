import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


model = Net().to(DEVICE)
x = batch.to(DEVICE, non_blocking=True)
y = t.to(device_at(0))
z = t.to(device_at(args.gpu), non_blocking=True)
w = t.to(device=device_at(local_rank))
v = t.to(device_at(3))
u = t.to(device)
s = t.to(DEVICE, memory_format=torch.channels_last)
inputs = [b.to(DEVICE) for b in batch]
out = model(
    x.to(DEVICE),
)
model = model.to(device_at(device_ids[0]))
h = t.to(device_at(device_id))
