import torch
from torch import inference_mode
from torch import no_grad

model = torch.compile(model, backend="tpu", dynamic=False)


@torch.no_grad()
def predict(x):
    return model(x)


@torch.no_grad()
def predict_bare(x):
    return model(x)


@no_grad()
def predict_imported(x):
    return model(x)


def evaluate(loader, flag):
    with torch.no_grad():
        out = [model(x) for x in loader]
    with torch.inference_mode(mode=flag):  # want "PCM003: .*the mode argument is computed"
        out += [model(x) for x in loader]
    with torch.inference_mode(False):  # inference mode off: nothing to do
        pass
    return out
