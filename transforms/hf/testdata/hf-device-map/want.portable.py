import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

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


def load(name):
    tok = AutoTokenizer.from_pretrained(name)
    with DEVICE:
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    return tok, model


def load_multiline(name, revision):
    if revision:
        with DEVICE:
            model = AutoModelForCausalLM.from_pretrained(
                name,
                revision=revision,
                # the whole model on GPU 0
                torch_dtype=torch.bfloat16,
            )
    else:
        with DEVICE:
            model = AutoModelForCausalLM.from_pretrained(name)
    return model


def load_second_gpu(name):
    with device_at(1):
        return AutoModelForCausalLM.from_pretrained(name)  # want:tpu "PHF001: device_map=\"cuda:1\" asks for CUDA"


def load_with_doc(name):
    with DEVICE:
        model = AutoModelForCausalLM.from_pretrained(name, trust_remote_code=True, revision="""
main""")
    return model
