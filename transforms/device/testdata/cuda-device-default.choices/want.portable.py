import argparse
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
parser.add_argument("--device", default=DEVICE.type, choices=[DEVICE.type, "cpu"])
parser.add_argument("--eval-device", default="cpu", choices=(DEVICE.type, "cpu", str(device_at(1))))
parser.add_argument("--backend", default="nccl", choices=["cuda", "gloo"])
parser.add_argument("--mode", choices=["cuda", "cpu"], help="not a device option")
