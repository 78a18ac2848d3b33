import torch as th

th.set_float32_matmul_precision("highest")
