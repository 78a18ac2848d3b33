import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

dtype = torch.bfloat16 if getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)() else torch.float16
ok = not getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)(including_emulation=False)
