import torch

s = torch.tpu.get_rng_state()
torch.tpu.set_rng_state(s)
