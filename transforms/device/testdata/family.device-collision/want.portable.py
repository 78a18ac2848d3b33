import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
ACCEL_DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

DEVICE = ACCEL_DEVICE.type


def run(DEVICE=None):
    return torch.zeros(2, device=ACCEL_DEVICE).to(ACCEL_DEVICE)
