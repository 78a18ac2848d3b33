import os

import torch

# Module-level code runs before the import at the end of the file: DEVICE
# must be defined in the leading import block, not after that late import.
if torch.cuda.is_available():
    default = torch.device("cuda")
else:
    default = torch.device("cpu")
print(os.getpid() > 0, default)


def zeros():
    return torch.zeros(1, device="cuda")


# adapted from elsewhere
import asyncio  # noqa
