import torch


def build(model, lr):
    # No torch.compile in this module: nothing to report.
    return torch.optim.AdamW(model.parameters(), lr=lr)
