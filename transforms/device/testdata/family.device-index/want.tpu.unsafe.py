import os

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


local_rank = int(os.environ.get("LOCAL_RANK", 0))
state = torch.load("ckpt.pt", map_location=device_at(local_rank))
dev = device_at(local_rank)
dev_kw = device_at(local_rank)
dev_cur = device_at(torch.cuda.current_device())
batch = batch.to(device_at(local_rank), non_blocking=True)
model = model.to(device_at(local_rank))
label = f"cuda:{local_rank}"
eval_device = "tpu"
for i in range(torch.cuda.device_count()):
    shards.append(weights[i].to(device_at(i)))
print(f"running on {device_at(local_rank)}")
