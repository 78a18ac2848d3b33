from torch import amp
import torch

scaler = amp.GradScaler("tpu", enabled=False)
with amp.autocast("tpu", dtype=torch.bfloat16):
    pass
