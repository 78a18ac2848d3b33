import torch

print(f"{torch.zeros(1, device='cuda')}")
print(f'{x.cuda()} {x.device.type == "cuda"}')
