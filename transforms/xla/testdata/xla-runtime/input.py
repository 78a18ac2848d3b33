import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def main(index, loader, device):
    n = xr.world_size()  # want "PXL005: PyTorch/XLA's `world_size`: use `torch.distributed.get_world_size\\(\\)`"
    r = xm.get_ordinal()  # want "PXL005: .*no longer exists in torch-xla 2.9"
    for batch in pl.MpDeviceLoader(loader, device):  # want "PXL005: .*MpDeviceLoader"
        pass
    return n, r


xmp.spawn(main, args=())  # want "PXL005: .*torchrun"
