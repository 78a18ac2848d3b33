import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

model = DDP(model, device_ids=[local_rank] if DEVICE.type == "cuda" else None, output_device=local_rank if DEVICE.type == "cuda" else None)
m2 = torch.nn.parallel.DistributedDataParallel(net, device_ids=[args.gpu] if DEVICE.type == "cuda" else None)
m3 = nn.parallel.DistributedDataParallel(
    net,
    device_ids=[rank] if DEVICE.type == "cuda" else None,
    find_unused_parameters=True,
)
m4 = DDP(net, [rank] if DEVICE.type == "cuda" else None)
m5 = DDP(net, device_ids=([rank] if use_cuda else None) if DEVICE.type == "cuda" else None)
torch.distributed.barrier(device_ids=[local_rank] if DEVICE.type == "cuda" else None)
torch.distributed.barrier()
