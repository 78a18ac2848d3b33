import torch


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    model = Net().cuda()
    x = batch.cuda(non_blocking=True)
    y = t.cuda(0)
    z = t.cuda(args.gpu, non_blocking=True)
    w = t.cuda(device=local_rank)
    v = t.cuda(3)
    u = t.cuda(device)
    s = t.cuda(memory_format=torch.channels_last)
    inputs = [b.cuda() for b in batch]
    out = model(
        x.cuda(),
    )
    model = model.cuda(device_ids[0])
    h = t.cuda(device_id)
