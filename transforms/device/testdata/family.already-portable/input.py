"""A library written for any accelerator (must produce no diff)."""
import torch

DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


def to_device(batch, device=DEVICE):
    return [b.to(device, non_blocking=True) for b in batch]


def describe(x):
    if x.device.type != "cpu":
        return "accelerator"
    return "cpu"  # not "cuda"
