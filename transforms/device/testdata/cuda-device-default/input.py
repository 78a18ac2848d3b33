import argparse
import os
from dataclasses import dataclass

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", type=str, default="cuda", help="device to use, e.g. cuda")
parser.add_argument("-d", "--eval-device", default="cuda:1")
parser.add_argument("--gpu", dest="device", default="cuda")
config = {"device": "cuda", "backend": "cuda"}
cfg = dict(device="cuda", lr=0.1)
device = "cuda" if torch.cuda.is_available() else "cpu"
DEVICE_NAME = "cuda:0"
dev = os.environ.get("DEVICE", "cuda")
dev2 = os.getenv("TRAIN_DEVICE", "cuda")
dev3 = getattr(args, "device", "cuda")
per_rank = f"cuda:{rank}"
device_for_rank = f"cuda:{rank}"


@dataclass
class TrainConfig:
    device: str = "cuda"
    batch_size: int = 32


class Runner:
    def __init__(self, model, device="cuda", *, eval_device: str = "cuda:0"):
        self.device = device
        self.cache_device = "cuda"


def load(path, map_device="cuda:1"):
    return path
