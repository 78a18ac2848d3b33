import torch
import torch.cuda as tc

world = torch.cuda.device_count()
procs = tc.device_count() * 2
multi = torch.cuda.device_count() > 1
for i in range(torch.cuda.device_count()):
    print(i)
