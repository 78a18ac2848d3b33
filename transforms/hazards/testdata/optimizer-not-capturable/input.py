import torch
from torch import optim


def build(model, lr):
    model = torch.compile(model)
    a = torch.optim.AdamW(model.parameters(), lr=lr)  # want "PDX005: AdamW under torch.compile needs capturable=True"
    b = optim.Adam(model.parameters(), lr=lr, capturable=False)  # want "PDX005: Adam under"
    c = optim.RMSprop(model.parameters(), capturable=True)
    d = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)  # SGD takes no capturable
    e = torch.optim.Adam(model.parameters(), **kwargs)  # may carry capturable
    f = torch.optim.Adam(model.parameters(), capturable=cfg.capturable)  # computed: trusted
    return a, b, c, d, e, f
