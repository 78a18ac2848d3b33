import os

import torch


def setup(args):
    pass


def single(rank):
    pass


def keyword(rank):
    pass


def pinned():
    torch.cuda.set_device(3)


if int(os.environ.get("LOCAL_RANK", 0)) >= 0: torch.cuda.set_device(gpu)


def both(rank):
    torch.cuda.manual_seed(0)


def guarded(rank):
    if torch.cuda.is_available():
        pass
    return rank
