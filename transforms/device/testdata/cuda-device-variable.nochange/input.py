import torch


def kernel(x, impl="cuda"):
    backend = "cuda"
    table = {"cuda": 1, "triton": 2}
    mode = "cuda"
    if impl == "cuda" and mode == backend:
        return table["cuda"]
    print("cuda")
    label = f"{mode}:{impl}"
    return torch.zeros(1, device=x.device), label


def reassigned(x):
    d = "cuda"
    d = pick(d)
    return x.to(d)
