import torch


def init_device(device="cuda", local_rank=0, distributed=False):
    device_type, *device_idx = device.split(":", maxsplit=1)
    if distributed and device != "cpu":
        device = f"{device_type}:{local_rank}"
    mode, impl = "fast", "cuda"
    label = f"{mode}:{impl}"
    return torch.device(device), label
