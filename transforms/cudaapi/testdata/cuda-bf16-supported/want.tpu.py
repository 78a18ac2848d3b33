import torch

dtype = torch.bfloat16 if True else torch.float16
ok = not True
