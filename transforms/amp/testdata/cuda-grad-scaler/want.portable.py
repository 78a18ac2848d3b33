import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

scaler = torch.amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
s2 = torch.amp.GradScaler(DEVICE.type, init_scale=2.0**14, enabled=args.fp16 and DEVICE.type == "cuda")
s3 = torch.amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
s4 = torch.amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
s5 = torch.amp.GradScaler(device=DEVICE.type, enabled=DEVICE.type == "cuda")
s6 = torch.amp.GradScaler(DEVICE.type, enabled=(cfg.amp and not cfg.bf16) and DEVICE.type == "cuda")
