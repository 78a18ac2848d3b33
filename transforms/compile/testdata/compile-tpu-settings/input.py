import torch
from torch import nn


def build(model, step_fn):
    model = torch.compile(model)
    head = torch.compile(nn.Linear(4, 4), fullgraph=True)
    body = torch.compile(
        model.body,
        fullgraph=True,
    )
    tail = torch.compile(
        model.tail,
        fullgraph=True  # keep one graph
    )
    step = torch.compile(step_fn, backend="inductor", dynamic=None)
    dbg = torch.compile(step_fn, backend="eager")
    return model, head, body, tail, step, dbg


@torch.compile
def gelu(x):
    return torch.nn.functional.gelu(x)


@torch.compile()
def silu(x):
    return torch.nn.functional.silu(x)


xla_model = torch.compile(model, backend="openxla")
