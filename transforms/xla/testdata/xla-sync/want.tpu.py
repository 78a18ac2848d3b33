import torch_xla
import torch_xla.core.xla_model as xm


def train(loader, step):
    for x in loader:
        loss = step(x)
        # want:portable "PXL002: `xm.mark_step\\(\\)` marks a PyTorch/XLA step"
    for x in loader:
        pass  # want:portable "PXL002: `torch_xla.sync\\(\\)`"
    return loss
