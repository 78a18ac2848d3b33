import os

import torch


def setup(args):
    if torch.accelerator.is_available():
        torch.accelerator.set_device_index(args.local_rank)
    if torch.accelerator.is_available():
        torch.accelerator.set_device_index(0)  # first GPU
    if torch.accelerator.is_available():
        torch.accelerator.set_device_index(device)


def single(rank):
    if torch.accelerator.is_available():
        torch.accelerator.set_device_index(rank)


def pinned():
    if torch.accelerator.is_available():
        torch.accelerator.set_device_index(3)


if int(os.environ.get("LOCAL_RANK", 0)) >= 0: torch.accelerator.set_device_index(gpu)


def both(rank):
    if torch.accelerator.is_available():
        torch.accelerator.set_device_index(rank)
    torch.cuda.manual_seed(0)


def guarded(rank):
    if torch.cuda.is_available():
        torch.accelerator.set_device_index(rank)
    return rank
