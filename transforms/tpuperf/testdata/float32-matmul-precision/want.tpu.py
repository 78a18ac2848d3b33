import torch
from torch.backends import cuda as tbc

torch.set_float32_matmul_precision("highest")
torch.set_float32_matmul_precision("highest")  # the alias resolves
torch.backends.cuda.matmul.allow_tf32 = True  # a speed setting: cuda-backend-flags (PDX004) reports it
torch.backends.cudnn.allow_tf32 = False  # convolutions on cuDNN: PDX004 reports it
old = torch.backends.cuda.matmul.allow_tf32
flags = torch.backends.cuda.matmul.allow_tf32 = False  # chained: left alone
torch.set_float32_matmul_precision("high")  # want "PTP001: set_float32_matmul_precision.\"high\". is TF32 .* three bfloat16 MXU passes"
torch.set_float32_matmul_precision("highest")  # TorchTPU honours it: not reported
torch.set_float32_matmul_precision("medium")
torch.set_float32_matmul_precision(mode)


def test_exact():
    torch.set_float32_matmul_precision("highest")  # keep float32 for the comparison
    try:
        pass
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
