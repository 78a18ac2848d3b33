import torch


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    model = Net().to("tpu")
    x = batch.to("tpu", non_blocking=True)
    y = t.to("tpu")
    z = t.to("tpu", non_blocking=True)
    w = t.to(device="tpu")
    v = t.to("tpu")
    u = t.to(device)
    s = t.to("tpu", memory_format=torch.channels_last)
    inputs = [b.to("tpu") for b in batch]
    out = model(
        x.to("tpu"),
    )
    model = model.to("tpu")
    h = t.to("tpu")
