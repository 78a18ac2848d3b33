import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

print(torch.get_device_module(DEVICE).get_device_name())
print(torch.get_device_module(DEVICE).get_device_name(0))
props = torch.get_device_module(DEVICE).get_device_properties(args.local_rank)
other = torch.get_device_module(DEVICE).get_device_properties(1)
