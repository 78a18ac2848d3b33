import numba
import torch

# torch.cuda.is_available()
"""torch.cuda.is_available() in a docstring"""
ok = numba.cuda.is_available()
acc = torch.accelerator.is_available()
msg = "torch.cuda.is_available()"
