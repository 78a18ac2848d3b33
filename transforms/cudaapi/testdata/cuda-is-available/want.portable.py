import torch
from torch import cuda
from torch.cuda import is_available

use_gpu = torch.accelerator.is_available()
if not torch.accelerator.is_available():
    raise SystemExit("need a GPU")
ok = torch.accelerator.is_available() and args.gpu
n = torch.accelerator.is_available() == True
device = "cuda" if torch.accelerator.is_available() else "cpu"
