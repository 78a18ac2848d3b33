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


def precision(training):
    if torch.cuda.is_available():
        if getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)():
            # bf16 where the device has it
            return "bf16-mixed" if training else "bf16-true"
        else:
            return "16-mixed" if training else "16-true"
    return "32-true"


def fallback():
    if not getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)():
        return torch.float16
    elif torch.cuda.device_count() > 1:
        return None
    return torch.bfloat16


use_bf16 = training_ok and getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)()
doc = getattr(torch.get_device_module(DEVICE), "is_bf16_supported", lambda *args, **kwargs: True)() and """two
lines"""
