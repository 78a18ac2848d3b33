import torch
from torch import inference_mode

model = torch.compile(model, backend="tpu", dynamic=False)


@torch.inference_mode()
def predict(x):
    return model(x)


@torch.inference_mode
def predict_bare(x):
    return model(x)


@inference_mode()
def predict_imported(x):
    return model(x)


def evaluate(loader, flag):
    with torch.inference_mode(True):
        out = [model(x) for x in loader]
    with torch.inference_mode(mode=flag):  # want "PCM003: .*the mode argument is computed"
        out += [model(x) for x in loader]
    with torch.inference_mode(False):  # inference mode off: nothing to do
        pass
    return out
