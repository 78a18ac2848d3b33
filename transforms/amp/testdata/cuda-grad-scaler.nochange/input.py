import torch

scaler = torch.amp.GradScaler("cpu")
s2 = torch.amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
s3 = MyGradScaler()
