import argparse
import os
from dataclasses import dataclass

import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


parser = argparse.ArgumentParser()
parser.add_argument("--device", type=str, default=DEVICE.type, help="device to use, e.g. cuda")
parser.add_argument("-d", "--eval-device", default=str(device_at(1)))
parser.add_argument("--gpu", dest="device", default=DEVICE.type)
config = {"device": DEVICE.type, "backend": "cuda"}
cfg = dict(device="cuda", lr=0.1)
device = DEVICE.type
DEVICE_NAME = str(device_at(0))
dev = os.environ.get("DEVICE", DEVICE.type)
dev2 = os.getenv("TRAIN_DEVICE", DEVICE.type)
dev3 = getattr(args, "device", DEVICE.type)
per_rank = f"cuda:{rank}"
device_for_rank = str(device_at(rank))


@dataclass
class TrainConfig:
    device: str = DEVICE.type
    batch_size: int = 32


class Runner:
    def __init__(self, model, device=DEVICE.type, *, eval_device: str = str(device_at(0))):
        self.device = device
        self.cache_device = DEVICE.type


def load(path, map_device=str(device_at(1))):
    return path
