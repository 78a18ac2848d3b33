from functools import partial

from torch.amp import autocast
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

amp_ctx = partial(autocast, DEVICE.type, enabled=DEVICE.type != "cpu")  # want "PAM004: .*through functools.partial"
