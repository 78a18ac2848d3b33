import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model, device_ids=[local_rank], output_device=local_rank)
m2 = torch.nn.parallel.DistributedDataParallel(net, device_ids=[args.gpu])
m3 = nn.parallel.DistributedDataParallel(
    net,
    device_ids=[rank],
    find_unused_parameters=True,
)
m4 = DDP(net, [rank])
m5 = DDP(net, device_ids=[rank] if use_cuda else None)
torch.distributed.barrier(device_ids=[local_rank])
torch.distributed.barrier()
