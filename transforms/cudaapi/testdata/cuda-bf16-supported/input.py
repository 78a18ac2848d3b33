import torch

dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
ok = not torch.cuda.is_bf16_supported(including_emulation=False)
