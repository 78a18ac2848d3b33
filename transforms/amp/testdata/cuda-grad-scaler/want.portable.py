import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

scaler = torch.amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
s2 = torch.amp.GradScaler(DEVICE.type, init_scale=2.0**14, enabled=args.fp16 and DEVICE.type == "cuda")
s3 = torch.amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
s4 = torch.amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
s5 = torch.amp.GradScaler(device=DEVICE.type, enabled=DEVICE.type == "cuda")
s6 = torch.amp.GradScaler(DEVICE.type, enabled=(cfg.amp and not cfg.bf16) and DEVICE.type == "cuda")
