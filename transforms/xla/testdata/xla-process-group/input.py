import torch.distributed as dist


def setup():
    dist.init_process_group("xla", init_method="xla://")  # want:portable "PXL004: the \"xla\" backend"
    dist.init_process_group(backend='xla')  # want:portable "PXL004"
    dist.init_process_group("nccl")
