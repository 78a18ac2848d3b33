import argparse

import torch.distributed as dist
from torch.distributed import init_process_group

parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default="nccl", type=str)
BACKEND = 'nccl'
cfg = {"backend": "nccl"}


def setup(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    init_process_group(backend="nccl")
    group = dist.new_group(ranks=[0, 1], backend="nccl")
    return group
