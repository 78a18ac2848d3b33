import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model)
m2 = torch.nn.parallel.DistributedDataParallel(net)
m3 = nn.parallel.DistributedDataParallel(
    net,
    find_unused_parameters=True,
)
m4 = DDP(net)
m5 = DDP(net)
torch.distributed.barrier()
torch.distributed.barrier()
