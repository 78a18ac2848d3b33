import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def build(model, step_fn, args):
    fast = torch.compile(model, mode=(None if DEVICE.type == "tpu" else "max-autotune"), backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))  # want:tpu "PCM001: torch.compile settings chosen for CUDA: mode= is an Inductor setting"
    graphs = torch.compile(step_fn, backend=("tpu" if DEVICE.type == "tpu" else "cudagraphs"), dynamic=(False if DEVICE.type == "tpu" else True))  # want:tpu "PCM001: .*chosen for CUDA: backend \"cudagraphs\" does not run on TPU; dynamic=True"
    chosen = torch.compile(step_fn, backend=("tpu" if DEVICE.type == "tpu" else args.backend), dynamic=(False if DEVICE.type == "tpu" else args.dynamic))  # want:tpu "PCM001: .*dynamic=args.dynamic becomes False"
    return fast, graphs, chosen
