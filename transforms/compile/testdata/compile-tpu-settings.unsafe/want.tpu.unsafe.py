import torch


def build(model, step_fn, args):
    fast = torch.compile(model, mode=None, backend="tpu", dynamic=False)  # want:tpu "PCM001: torch.compile settings chosen for CUDA: mode= is an Inductor setting"
    graphs = torch.compile(step_fn, backend="tpu", dynamic=False)  # want:tpu "PCM001: .*chosen for CUDA: backend \"cudagraphs\" does not run on TPU; dynamic=True"
    chosen = torch.compile(step_fn, backend="tpu", dynamic=False)  # want:tpu "PCM001: .*dynamic=args.dynamic becomes False"
    return fast, graphs, chosen
