import torch


def build(model, step_fn, args):
    fast = torch.compile(model, mode="max-autotune")  # want:tpu "PCM001: torch.compile settings chosen for CUDA: mode= is an Inductor setting"
    graphs = torch.compile(step_fn, backend="cudagraphs", dynamic=True)  # want:tpu "PCM001: .*chosen for CUDA: backend \"cudagraphs\" does not run on TPU; dynamic=True"
    chosen = torch.compile(step_fn, backend=args.backend, dynamic=args.dynamic)  # want:tpu "PCM001: .*dynamic=args.dynamic becomes False"
    return fast, graphs, chosen
