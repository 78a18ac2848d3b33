import torch

name = torch.get_device_module(DEVICE).get_device_name()
