import transformers
from transformers import pipeline
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


def build(name):
    clf = pipeline("sentiment-analysis", model=name, device=DEVICE)
    gen = transformers.pipeline("text-generation", model=name, device=DEVICE)
    ner = pipeline("ner", model=name, device=DEVICE)
    asr = pipeline("automatic-speech-recognition", model=name, device=device_at(1))  # want:tpu "PHF002: pipeline\\(device=1\\) is a CUDA ordinal"
    big = pipeline("text-generation", model=name, device=DEVICE)  # want "PHF002: .*does not place weights on TPU"
    one = pipeline("text-generation", model=name, device=DEVICE)
    return clf, gen, ner, asr, big, one
