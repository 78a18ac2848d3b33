import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


def build(model, step_fn, args):
    fast = torch.compile(model, mode=(None if DEVICE.type == "tpu" else "max-autotune"), backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))  # want:tpu "PCM001: torch.compile settings chosen for CUDA: mode= is an Inductor setting"
    graphs = torch.compile(step_fn, backend=("tpu" if DEVICE.type == "tpu" else "cudagraphs"), dynamic=(False if DEVICE.type == "tpu" else True))  # want:tpu "PCM001: .*chosen for CUDA: backend \"cudagraphs\" does not run on TPU; dynamic=True"
    chosen = torch.compile(step_fn, backend=("tpu" if DEVICE.type == "tpu" else args.backend), dynamic=(False if DEVICE.type == "tpu" else args.dynamic))  # want:tpu "PCM001: .*dynamic=args.dynamic becomes False"
    return fast, graphs, chosen
