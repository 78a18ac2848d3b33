import torch
from torch import cuda
from torch.cuda import is_available

use_gpu = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu"
if not (torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu"):
    raise SystemExit("need a GPU")
ok = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu" and args.gpu
n = (torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu") == True
device = "cuda" if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu" else "cpu"
opt = torch.optim.AdamW(params, fused=torch.cuda.is_available())
