from functools import partial

import torch
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __init__(self, samples, device):
        self.samples = samples
        self.device = device
        self.cache = torch.zeros(3).to(device)  # built once, in the main process

    def __getitem__(self, i):
        x, y = self.samples[i]
        x = x.to(self.device)  # want "PTP007: `.to.self.device.` in __getitem__, which DataLoader worker processes run"
        m = torch.ones(3, device=x.device)  # where x already is
        z = x.to(torch.float16)
        w = x.to("cpu")
        return x.cuda(), y  # want "PTP007: `.cuda..` in __getitem__"


class Plain:
    def __getitem__(self, i):
        return self.data[i].cuda()


def seed_worker(worker_id, device):
    torch.cuda.set_device(worker_id)  # want "PTP007: `torch.cuda.set_device.....` in the worker_init_fn"
    torch.manual_seed(worker_id)


def collate(batch):
    return torch.stack(batch).to("cuda")  # want "PTP007: `.to.\"cuda\".` in the collate_fn"


def unused(batch):
    return batch.cuda()


loader = DataLoader(
    Pairs([], "cuda"),
    num_workers=4,
    worker_init_fn=partial(seed_worker, device="cuda"),
    collate_fn=collate,
)
lam = DataLoader(ds, collate_fn=lambda b: torch.tensor(b, device="cuda"))  # want "PTP007: a tensor made with device=\"cuda\" in the collate_fn"
