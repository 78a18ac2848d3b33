import random

import torch


def seed_all(seed):
    random.seed(seed)
    torch.manual_seed(seed)


def seed_cuda(seed):
    torch.manual_seed(seed + 1)
