import torch

s = torch.cuda.get_rng_state(device="cuda")
torch.cuda.set_rng_state(s, "cuda")
