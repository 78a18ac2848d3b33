import torch_xla.core.xla_model as xm


def step(optimizer, opts, args):
    xm.optimizer_step(optimizer)  # want "PXL003: .*DistributedDataParallel"
    xm.optimizer_step(opts[0], barrier=True)  # want "PXL003"
    xm.optimizer_step(optimizer, optimizer_args=args)  # want "PXL003"
    xm.optimizer_step(optimizer, groups=[[0, 1]])  # want "PXL003: .*all-reduces"
