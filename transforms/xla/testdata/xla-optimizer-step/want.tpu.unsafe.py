import torch_xla.core.xla_model as xm


def step(optimizer, opts, args):
    optimizer.step()  # want "PXL003: .*DistributedDataParallel"
    opts[0].step()  # want "PXL003"
    optimizer.step(**args)  # want "PXL003"
    xm.optimizer_step(optimizer, groups=[[0, 1]])  # want "PXL003: .*all-reduces"
