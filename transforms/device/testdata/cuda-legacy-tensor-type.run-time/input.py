import torch
from torch import cuda


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    empty = torch.cuda.FloatTensor()
    buf = torch.cuda.FloatTensor(4, 8)
    ids = torch.cuda.LongTensor([1, 2, 3])
    mask = torch.cuda.BoolTensor((True, False))
    amb = torch.cuda.FloatTensor(n)
    y = x.type(torch.cuda.HalfTensor)
    z = x.type(cuda.DoubleTensor)
    if isinstance(t, torch.cuda.FloatTensor):
        pass
    if t.type() == "torch.cuda.FloatTensor":
        pass
    torch.set_default_tensor_type(torch.cuda.FloatTensor)
    Tensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor
    print(f"{torch.cuda.IntTensor([1])}")
