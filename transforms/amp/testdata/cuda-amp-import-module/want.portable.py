from torch import amp
import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

scaler = amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
with amp.autocast(DEVICE.type):
    pass
