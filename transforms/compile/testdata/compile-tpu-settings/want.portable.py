import torch
from torch import nn

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def build(model, step_fn):
    model = torch.compile(model, backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))
    head = torch.compile(nn.Linear(4, 4), fullgraph=True, backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))
    body = torch.compile(
        model.body,
        fullgraph=True,
        backend=("tpu" if DEVICE.type == "tpu" else "inductor"),
        dynamic=(False if DEVICE.type == "tpu" else None),
    )
    tail = torch.compile(
        model.tail,
        fullgraph=True,  # keep one graph
        backend=("tpu" if DEVICE.type == "tpu" else "inductor"),
        dynamic=(False if DEVICE.type == "tpu" else None),
    )
    step = torch.compile(step_fn, backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))
    dbg = torch.compile(step_fn, backend="eager", dynamic=(False if DEVICE.type == "tpu" else None))
    return model, head, body, tail, step, dbg


@torch.compile(backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))
def gelu(x):
    return torch.nn.functional.gelu(x)


@torch.compile(backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))
def silu(x):
    return torch.nn.functional.silu(x)


xla_model = torch.compile(model, backend=("tpu" if DEVICE.type == "tpu" else "openxla"), dynamic=(False if DEVICE.type == "tpu" else None))
