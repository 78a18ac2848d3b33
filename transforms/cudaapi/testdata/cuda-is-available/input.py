import torch
from torch import cuda
from torch.cuda import is_available

use_gpu = torch.cuda.is_available()
if not torch.cuda.is_available():
    raise SystemExit("need a GPU")
ok = cuda.is_available() and args.gpu
n = is_available() == True
device = "cuda" if torch.cuda.is_available() else "cpu"
opt = torch.optim.AdamW(params, fused=torch.cuda.is_available())
