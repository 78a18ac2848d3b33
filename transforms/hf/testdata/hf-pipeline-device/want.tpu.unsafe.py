import transformers
from transformers import pipeline


def build(name):
    clf = pipeline("sentiment-analysis", model=name, device="tpu")
    gen = transformers.pipeline("text-generation", model=name, device="tpu")
    ner = pipeline("ner", model=name, device="tpu")
    asr = pipeline("automatic-speech-recognition", model=name, device="tpu")  # want:tpu "PHF002: pipeline\\(device=1\\) is a CUDA ordinal"
    big = pipeline("text-generation", model=name, device="tpu")  # want "PHF002: .*does not place weights on TPU"
    one = pipeline("text-generation", model=name, device="tpu")
    return clf, gen, ner, asr, big, one
