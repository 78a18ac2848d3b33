import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def train(index, loader, step):
    device = xm.xla_device()
    for x in loader:
        loss = step(x.to(device))
        xm.mark_step()  # want "PXL002: .*kept: the file still uses torch_xla after the rewrite \\(`xmp.spawn`, line 14\\)"
    return loss


if __name__ == "__main__":
    xmp.spawn(train, args=(None, None))
