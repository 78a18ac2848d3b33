import torch_xla
import torch_xla.core.xla_model as xm


def train(loader, step):
    for x in loader:
        loss = step(x)
        xm.mark_step()  # want:portable "PXL002: `xm.mark_step\\(\\)` marks a PyTorch/XLA step"
    for x in loader:
        torch_xla.sync()  # want:portable "PXL002: `torch_xla.sync\\(\\)`"
    return loss
