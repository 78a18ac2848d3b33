import torch


def to_numpy(x):
    """Return x as numpy; x.is_cuda tensors are copied first."""
    if x.is_cuda:  # want "PDX001: `x.is_cuda` is False for TPU tensors"
        x = x.cpu()
    return x.numpy()


def place(model, batch):
    on_gpu = next(model.parameters()).is_cuda  # want "PDX001: .*is_cuda.*device.type"
    # batch.is_cuda in a comment is ignored
    return batch if on_gpu else batch.pin_memory()


class Holder:
    def __init__(self):
        self.is_cuda = False  # an attribute of our own object: not reported
