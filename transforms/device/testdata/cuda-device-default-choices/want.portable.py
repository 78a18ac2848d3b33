import argparse
import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE (a TPU process sees its one chip as tpu:0)."""
    return torch.device(DEVICE.type, index) if DEVICE.type == "cuda" else DEVICE


parser = argparse.ArgumentParser()
parser.add_argument("--device", default=DEVICE.type, choices=[DEVICE.type, "cpu"])
parser.add_argument("--eval-device", default="cpu", choices=(DEVICE.type, "cpu", str(device_at(1))))
parser.add_argument("--backend", default="nccl", choices=["cuda", "gloo"])
parser.add_argument("--mode", choices=["cuda", "cpu"], help="not a device option")
