import torch

scaler = torch.amp.GradScaler("tpu", enabled=False)
s2 = torch.amp.GradScaler("tpu", init_scale=2.0**14, enabled=False)
s3 = torch.amp.GradScaler("tpu", enabled=False)
s4 = torch.amp.GradScaler("tpu", enabled=False)
s5 = torch.amp.GradScaler(device="tpu", enabled=False)
s6 = torch.amp.GradScaler("tpu", enabled=False)
