import torch

print(torch.cuda.get_device_name())
print(torch.cuda.get_device_name(0))
props = torch.cuda.get_device_properties(args.local_rank)
other = torch.cuda.get_device_properties(1)
