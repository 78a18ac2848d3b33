import torch

dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
ok = not torch.cuda.is_bf16_supported(including_emulation=False)


def precision(training):
    if torch.cuda.is_available():
        if torch.cuda.is_bf16_supported():
            # bf16 where the device has it
            return "bf16-mixed" if training else "bf16-true"
        else:
            return "16-mixed" if training else "16-true"
    return "32-true"


def fallback():
    if not torch.cuda.is_bf16_supported():
        return torch.float16
    elif torch.cuda.device_count() > 1:
        return None
    return torch.bfloat16


use_bf16 = training_ok and torch.cuda.is_bf16_supported()
doc = torch.cuda.is_bf16_supported() and """two
lines"""
