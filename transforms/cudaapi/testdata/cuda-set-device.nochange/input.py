import torch

torch.accelerator.set_device_index(0)
model.set_device(1)
