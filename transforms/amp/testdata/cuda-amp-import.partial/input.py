from functools import partial

from torch.cuda.amp import autocast

amp_ctx = partial(autocast, enabled=True)  # want "PAM004: .*through functools.partial"
