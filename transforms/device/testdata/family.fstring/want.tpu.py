import torch

print(f"{torch.zeros(1, device='tpu')}")
print(f'{x.to("tpu")} {x.device.type == "tpu"}')
