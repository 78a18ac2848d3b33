import torch_xla.core.xla_model as xm


def train(loader, step):
    for x in loader:
        loss = step(x)
        xm.mark_step()  # want "PXL002: .*kept: the file still uses torch_xla after the rewrite \\(`xm.mark_step`, line 8\\)"
    flush = xm.mark_step() or True  # want "PXL002: .*needs none; kept"
    return loss, flush
