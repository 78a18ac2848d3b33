import torch

dtype = torch.bfloat16
ok = False


def precision(training):
    if torch.cuda.is_available():
        # bf16 where the device has it
        return "bf16-mixed" if training else "bf16-true"
    return "32-true"


def fallback():
    if torch.cuda.device_count() > 1:
        return None
    return torch.bfloat16


use_bf16 = training_ok
doc = """two
lines"""
