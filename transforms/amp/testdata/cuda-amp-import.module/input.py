from torch.cuda import amp

scaler = amp.GradScaler()
with amp.autocast():
    pass
