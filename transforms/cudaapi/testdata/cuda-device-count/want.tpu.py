import torch
import torch.cuda as tc

world = torch.tpu.device_count() if hasattr(torch, "tpu") else 0
procs = (torch.tpu.device_count() if hasattr(torch, "tpu") else 0) * 2
multi = (torch.tpu.device_count() if hasattr(torch, "tpu") else 0) > 1
for i in range(torch.tpu.device_count() if hasattr(torch, "tpu") else 0):
    print(i)
