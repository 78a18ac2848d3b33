import torch
from torch import cuda
import contextlib

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def fill(local_rank, i):
    with torch.cuda.device(local_rank) if DEVICE.type == "cuda" else contextlib.nullcontext():
        a = torch.zeros(4)
    with (cuda.device(i) if DEVICE.type == "cuda" else contextlib.nullcontext()) as d, open("log") as fh:
        fh.write(str(d))
    ctx = torch.cuda.device(0) if DEVICE.type == "cuda" else contextlib.nullcontext()
    with ctx:
        pass
    return [torch.cuda.device(args.gpu) if DEVICE.type == "cuda" else contextlib.nullcontext()]
