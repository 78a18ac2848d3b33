import os
from functools import partial

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl", device_id=local_rank)  # want "PTP004: init_process_group device_id= a local rank becomes a device of the current accelerator"
a = FSDP(model, device_id=local_rank)  # want "PTP004: FSDP device_id= a local rank"
wrap = partial(FSDP, use_orig_params=True, device_id=int(os.environ["LOCAL_RANK"]))  # want "PTP004: FSDP device_id= a local rank"
b = FSDP(model, device_id=3)  # want "PTP004: FSDP device_id= a local rank"
c = FSDP(model, device_id=dist.get_rank() % torch.cuda.device_count())  # want "PTP004: FSDP device_id= a local rank"
ok1 = FSDP(model, device_id=0)
ok2 = FSDP(model, device_id=torch.cuda.current_device())
ok3 = FSDP(model, device_id=torch.accelerator.current_device_index())
ok4 = FSDP(model, device_id=device)
ok5 = FSDP(model, device_id=torch.device("cuda", local_rank))
ok6 = other(model, device_id=local_rank)
