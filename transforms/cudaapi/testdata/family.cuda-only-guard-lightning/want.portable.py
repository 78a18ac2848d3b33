import lightning as L
import torch


def fabric():
    # The branch picks Lightning's CUDA accelerator: the probe stays CUDA (PCU012).
    if torch.cuda.is_available():
        accelerator = "cuda"
    elif torch.backends.mps.is_available():
        accelerator = "mps"
    else:
        accelerator = "cpu"
    return L.Fabric(accelerator=accelerator, devices=1)


def trainer(model):
    if torch.cuda.is_available():
        return L.Trainer(accelerator="gpu", devices=1)
    return L.Trainer(accelerator="cpu")


def half(model):
    # Device-agnostic: the probe is rewritten.
    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in ("cuda", "tpu"):
        model = model.half()
    return L.Trainer(accelerator="auto"), model
