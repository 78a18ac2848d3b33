import torch


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    print(f"{torch.zeros(1, device='cuda')}")
    print(f'{x.cuda()} {x.device.type == "cuda"}')
