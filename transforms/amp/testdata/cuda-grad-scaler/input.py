import torch

scaler = torch.cuda.amp.GradScaler()
s2 = torch.cuda.amp.GradScaler(init_scale=2.0**14, enabled=args.fp16)
s3 = torch.amp.GradScaler("cuda")
s4 = torch.amp.GradScaler()
s5 = torch.amp.GradScaler(device="cuda", enabled=True)
s6 = torch.cuda.amp.GradScaler(enabled=cfg.amp and not cfg.bf16)
