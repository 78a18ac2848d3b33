from functools import partial

from torch.amp import autocast
import torch

amp_ctx = partial(autocast, "tpu", enabled=True, dtype=torch.bfloat16)  # want "PAM004: .*through functools.partial"
