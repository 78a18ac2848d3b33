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

parser = argparse.ArgumentParser()
parser.add_argument("--device", type=str, default="tpu", help="device to use, e.g. cuda")
parser.add_argument("-d", "--eval-device", default="tpu:0")
parser.add_argument("--gpu", dest="device", default="tpu")
config = {"device": "tpu", "backend": "cuda"}
cfg = dict(device="cuda", lr=0.1)
device = DEVICE.type
DEVICE_NAME = "tpu:0"
dev = os.environ.get("DEVICE", "tpu")
dev2 = os.getenv("TRAIN_DEVICE", "tpu")
dev3 = getattr(args, "device", "tpu")
per_rank = f"cuda:{rank}"
device_for_rank = "tpu"


@dataclass
class TrainConfig:
    device: str = "tpu"
    batch_size: int = 32


class Runner:
    def __init__(self, model, device="tpu", *, eval_device: str = "tpu:0"):
        self.device = device
        self.cache_device = "tpu"


def load(path, map_device="tpu:0"):
    return path
