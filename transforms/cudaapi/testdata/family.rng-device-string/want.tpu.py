import torch

s = torch.accelerator.random.get_rng_state()
torch.tpu.set_rng_state(s)
