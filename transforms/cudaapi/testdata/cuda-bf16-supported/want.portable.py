import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

dtype = torch.bfloat16 if getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)() else torch.float16
ok = not getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)(including_emulation=False)
