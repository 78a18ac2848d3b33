import os

import torch


def setup(args):
    torch.cuda.set_device(args.local_rank)
    torch.cuda.set_device(0)  # first GPU
    torch.cuda.set_device(device)


def single(rank):
    torch.cuda.set_device(rank)


def keyword(rank):
    torch.cuda.set_device(device=rank)


def pinned():
    torch.cuda.set_device(3)


if int(os.environ.get("LOCAL_RANK", 0)) >= 0: torch.cuda.set_device(gpu)


def both(rank):
    torch.cuda.set_device(rank)
    torch.cuda.manual_seed(0)


def guarded(rank):
    if torch.cuda.is_available():
        torch.cuda.set_device(rank)
    return rank
