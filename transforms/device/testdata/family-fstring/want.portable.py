import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

print(f"{torch.zeros(1, device=DEVICE)}")
print(f'{x.to(DEVICE)} {(DEVICE.type != "cpu" and x.device.type == DEVICE.type)}')
