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
        x = x.to(self.device)  # want "PTP007: device work .a transfer, a tensor made on the device, or a device binding. in __getitem__, which DataLoader worker processes run"
        m = torch.ones(3, device=x.device)  # where x already is
        z = x.to(torch.float16)
        w = x.to("cpu")
        return x.cuda(), y  # want "PTP007: device work .* in __getitem__"


class Migrated(torch.utils.data.IterableDataset):
    def __iter__(self):
        for x in self.xs:
            yield x.to(pallasify_device())  # want "PTP007: device work .* in __iter__"
            yield x.to(x.get_device())


class Plain:
    def __getitem__(self, i):
        return self.data[i].cuda()


def seed_worker(worker_id, device):
    torch.cuda.set_device(worker_id)  # want "PTP007: device work .* in the worker_init_fn"
    torch.manual_seed(worker_id)


def collate(batch):
    return torch.stack(batch).to("cuda")  # want "PTP007: device work .* in the collate_fn"


def unused(batch):
    return batch.cuda()


loader = DataLoader(
    Pairs([], "cuda"),
    num_workers=4,
    worker_init_fn=partial(seed_worker, device="cuda"),
    collate_fn=collate,
)
lam = DataLoader(ds, collate_fn=lambda b: torch.tensor(b, device="cuda"))  # want "PTP007: device work .* in the collate_fn"
