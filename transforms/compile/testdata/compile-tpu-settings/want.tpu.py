import torch
from torch import nn


def build(model, step_fn):
    model = torch.compile(model, backend="tpu", dynamic=False)
    head = torch.compile(nn.Linear(4, 4), fullgraph=True, backend="tpu", dynamic=False)
    body = torch.compile(
        model.body,
        fullgraph=True,
        backend="tpu",
        dynamic=False,
    )
    tail = torch.compile(
        model.tail,
        fullgraph=True,  # keep one graph
        backend="tpu",
        dynamic=False,
    )
    step = torch.compile(step_fn, backend="tpu", dynamic=False)
    dbg = torch.compile(step_fn, backend="eager", dynamic=False)
    return model, head, body, tail, step, dbg


@torch.compile(backend="tpu", dynamic=False)
def gelu(x):
    return torch.nn.functional.gelu(x)


@torch.compile(backend="tpu", dynamic=False)
def silu(x):
    return torch.nn.functional.silu(x)


xla_model = torch.compile(model, backend="tpu", dynamic=False)
