# hosts: cpu mps cuda
# layout: library
# A library module (functions, no entry-script marks) of a migrated tree: the
# device is found on first use (pallasify_device(), defined inline outside a
# package), a device parameter default is resolved in the body and a
# dataclass field by a default_factory, and every host keeps the original's
# answers: a caller passing device=None explicitly still passes None.
from dataclasses import dataclass

import torch


@dataclass
class Config:
    device: str = "cuda" if torch.cuda.is_available() else "cpu"
    width: int = 4


def pick(x, device="cuda" if torch.cuda.is_available() else "cpu"):
    return str(torch.device(device)), x


def asked(device="cuda" if torch.cuda.is_available() else "cpu"):
    return repr(device)


def ranked(rank):
    if torch.cuda.is_available():
        return str(torch.device(f"cuda:{rank}"))
    return "cpu"


def is_gpu(device_type):
    return device_type == "cuda"


print("config", Config().device, Config(width=2))
print("pick", pick(1), pick(2, device="cpu"))
print("asked", asked(None), asked(device=None), asked())
print("ranked", ranked(0))
print("is_gpu", is_gpu(Config().device))
