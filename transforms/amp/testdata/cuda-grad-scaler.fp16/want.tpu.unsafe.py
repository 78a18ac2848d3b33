import torch

model = model.half()
scaler = torch.amp.GradScaler("tpu", enabled=False)
