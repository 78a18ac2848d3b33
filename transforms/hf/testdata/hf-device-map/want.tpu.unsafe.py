import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def load(name):
    tok = AutoTokenizer.from_pretrained(name)
    with torch.device("tpu"):
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    return tok, model


def load_multiline(name, revision):
    if revision:
        with torch.device("tpu"):
            model = AutoModelForCausalLM.from_pretrained(
                name,
                revision=revision,
                # the whole model on GPU 0
                torch_dtype=torch.bfloat16,
            )
    else:
        with torch.device("tpu"):
            model = AutoModelForCausalLM.from_pretrained(name)
    return model


def load_second_gpu(name):
    with torch.device("tpu"):
        return AutoModelForCausalLM.from_pretrained(name)  # want:tpu "PHF001: device_map=\"cuda:1\" asks for CUDA"


def load_with_doc(name):
    with torch.device("tpu"):
        model = AutoModelForCausalLM.from_pretrained(name, trust_remote_code=True, revision="""
main""")
    return model
