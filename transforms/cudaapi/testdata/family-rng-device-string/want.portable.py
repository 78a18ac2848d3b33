import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

s = torch.accelerator.random.get_rng_state() if DEVICE.type != "cpu" else torch.get_rng_state()
if DEVICE.type != "cpu":
    torch.get_device_module(DEVICE).set_rng_state(s)
