import torch.distributed as dist


def setup():
    dist.init_process_group("tpu_dist")  # want:portable "PXL004: the \"xla\" backend"
    dist.init_process_group(backend='tpu_dist')  # want:portable "PXL004"
    dist.init_process_group("nccl")
