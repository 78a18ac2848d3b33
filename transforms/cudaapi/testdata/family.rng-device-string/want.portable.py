import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

s = torch.accelerator.random.get_rng_state() if DEVICE.type != "cpu" else torch.get_rng_state()
if DEVICE.type != "cpu":
    torch.get_device_module(DEVICE).set_rng_state(s)
