import torch_xla
import torch_xla.core.xla_model as xm


def train(loader, step):
    for x in loader:
        loss = step(x)
    for x in loader:
        pass  # want:portable "PXL002: `torch_xla.sync\\(\\)`"
    return loss
