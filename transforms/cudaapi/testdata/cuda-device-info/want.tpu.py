import torch

print(torch.tpu.get_device_name())
print(torch.tpu.get_device_name())
props = torch.tpu.get_device_properties()
other = torch.cuda.get_device_properties(1)
