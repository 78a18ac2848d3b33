import torch
import torch.cuda as tc

world = torch.accelerator.device_count()
procs = torch.accelerator.device_count() * 2
multi = torch.accelerator.device_count() > 1
for i in range(torch.accelerator.device_count()):
    print(i)
