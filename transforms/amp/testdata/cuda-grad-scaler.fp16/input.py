import torch

model = model.half()
scaler = torch.cuda.amp.GradScaler()
