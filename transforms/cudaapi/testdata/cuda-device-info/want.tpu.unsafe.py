import torch

print(torch.tpu.get_device_name())
print(torch.tpu.get_device_name())
props = torch.tpu.get_device_properties()
other = torch.tpu.get_device_properties()
