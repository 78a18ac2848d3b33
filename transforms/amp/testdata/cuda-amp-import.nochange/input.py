from torch.amp import autocast
from torch.cuda.amp import autocast as ac

ctx = ac if use_amp else None
with autocast("cpu"):
    pass
