import torch
from torch import cuda


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    empty = torch.empty(0, dtype=torch.float32, device="tpu")
    buf = torch.empty(4, 8, dtype=torch.float32, device="tpu")
    ids = torch.tensor([1, 2, 3], dtype=torch.int64, device="tpu")
    mask = torch.tensor((True, False), dtype=torch.bool, device="tpu")
    amb = torch.cuda.FloatTensor(n)
    y = x.to("tpu", torch.float16)
    z = x.to("tpu", torch.float64)
    if isinstance(t, torch.cuda.FloatTensor):
        pass
    if t.type() == "torch.cuda.FloatTensor":
        pass
    torch.set_default_tensor_type(torch.cuda.FloatTensor)
    Tensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor
    print(f"{torch.tensor([1], dtype=torch.int32, device='tpu')}")
