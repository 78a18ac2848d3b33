import torch

s = torch.get_rng_state()
torch.set_rng_state(s)
all_states = torch.cuda.get_rng_state_all()
g = torch.Generator().get_state()
