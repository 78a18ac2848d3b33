import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def load(name):
    tok = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16, device_map="cuda")
    return tok, model


def load_multiline(name, revision):
    if revision:
        model = AutoModelForCausalLM.from_pretrained(
            name,
            revision=revision,
            device_map={"": 0},  # the whole model on GPU 0
            torch_dtype=torch.bfloat16,
        )
    else:
        model = AutoModelForCausalLM.from_pretrained(name, device_map=0)
    return model


def load_second_gpu(name):
    return AutoModelForCausalLM.from_pretrained(name, device_map="cuda:1")  # want:tpu "PHF001: device_map=\"cuda:1\" asks for CUDA"


def load_with_doc(name):
    model = AutoModelForCausalLM.from_pretrained(name, device_map="cuda:0", trust_remote_code=True, revision="""
main""")
    return model
