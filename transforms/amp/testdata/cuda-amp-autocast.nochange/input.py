import torch

# torch.cuda.amp.autocast()
with torch.amp.autocast("cpu"):
    pass
ctx = torch.cuda.amp.autocast(*args)
msg = "torch.cuda.amp.autocast"
