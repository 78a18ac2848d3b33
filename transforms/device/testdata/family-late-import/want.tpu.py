import os

import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

# Module-level code runs before the import at the end of the file: DEVICE
# must be defined in the leading import block, not after that late import.
if torch.cuda.is_available():
    default = DEVICE
else:
    default = torch.device("cpu")
print(os.getpid() > 0, default)


def zeros():
    return torch.zeros(1, device="tpu")


# adapted from elsewhere
import asyncio  # noqa
