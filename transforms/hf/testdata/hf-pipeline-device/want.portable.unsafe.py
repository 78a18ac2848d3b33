import transformers
from transformers import pipeline
import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


def build(name):
    clf = pipeline("sentiment-analysis", model=name, device=DEVICE)
    gen = transformers.pipeline("text-generation", model=name, device=DEVICE)
    ner = pipeline("ner", model=name, device=DEVICE)
    asr = pipeline("automatic-speech-recognition", model=name, device=torch.device(DEVICE.type, 1))  # want:tpu "PHF002: pipeline\\(device=1\\) is a CUDA ordinal"
    big = pipeline("text-generation", model=name, device=DEVICE)  # want "PHF002: .*does not place weights on TPU"
    one = pipeline("text-generation", model=name, device=DEVICE)
    return clf, gen, ner, asr, big, one
