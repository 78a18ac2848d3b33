import torch
from torch import cuda
from torch.cuda import is_available

use_gpu = hasattr(torch, "tpu") and torch.tpu.is_available()
if not (hasattr(torch, "tpu") and torch.tpu.is_available()):
    raise SystemExit("need a GPU")
ok = hasattr(torch, "tpu") and torch.tpu.is_available() and args.gpu
n = (hasattr(torch, "tpu") and torch.tpu.is_available()) == True
device = "cuda" if hasattr(torch, "tpu") and torch.tpu.is_available() else "cpu"
