import argparse

import torch.distributed as dist
from torch.distributed import init_process_group

parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default="tpu_dist", type=str)
BACKEND = 'tpu_dist'
cfg = {"backend": "tpu_dist"}


def setup(rank, world_size):
    dist.init_process_group("tpu_dist", rank=rank, world_size=world_size)
    init_process_group(backend="tpu_dist")
    group = dist.new_group(ranks=[0, 1], backend="tpu_dist")
    return group
