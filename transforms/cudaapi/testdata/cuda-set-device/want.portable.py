import os

import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def setup(args):
    if DEVICE.type == "cuda":
        torch.accelerator.set_device_index(args.local_rank)
    if DEVICE.type == "cuda":
        torch.accelerator.set_device_index(0)  # first GPU
    if DEVICE.type == "cuda":
        torch.accelerator.set_device_index(device)


def single(rank):
    if DEVICE.type == "cuda":
        torch.accelerator.set_device_index(rank)


def keyword(rank):
    if DEVICE.type == "cuda":
        torch.accelerator.set_device_index(rank)


def pinned():
    if DEVICE.type == "cuda":
        torch.accelerator.set_device_index(3)


if int(os.environ.get("LOCAL_RANK", 0)) >= 0: torch.accelerator.set_device_index(gpu) if DEVICE.type == "cuda" else None


def both(rank):
    if DEVICE.type == "cuda":
        torch.accelerator.set_device_index(rank)
    torch.cuda.manual_seed(0)


def guarded(rank):
    if torch.cuda.is_available():
        if DEVICE.type == "cuda":
            torch.accelerator.set_device_index(rank)
    return rank
