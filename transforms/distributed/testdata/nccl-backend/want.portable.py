import argparse

import torch.distributed as dist
from torch.distributed import init_process_group
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default={"cuda": "nccl", "tpu": "tpu_dist"}.get(DEVICE.type, "gloo"), type=str)
BACKEND = {"cuda": "nccl", "tpu": "tpu_dist"}.get(DEVICE.type, "gloo")
cfg = {"backend": {"cuda": "nccl", "tpu": "tpu_dist"}.get(DEVICE.type, "gloo")}


def setup(rank, world_size):
    dist.init_process_group({"cuda": "nccl", "tpu": "tpu_dist"}.get(DEVICE.type, "gloo"), rank=rank, world_size=world_size)
    init_process_group(backend={"cuda": "nccl", "tpu": "tpu_dist"}.get(DEVICE.type, "gloo"))
    group = dist.new_group(ranks=[0, 1], backend={"cuda": "nccl", "tpu": "tpu_dist"}.get(DEVICE.type, "gloo"))
    return group
