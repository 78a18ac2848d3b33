from transformers import AutoModelForCausalLM
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

with DEVICE:
    model = AutoModelForCausalLM.from_pretrained("gpt2")  # want "PHF001: device_map=\"auto\" does not place weights on TPU"
with DEVICE:
    big = AutoModelForCausalLM.from_pretrained(  # a comment on the first line
        "big",
        # want "PHF001: device_map=\"balanced\""
    )
models = [AutoModelForCausalLM.from_pretrained(n, device_map="cuda") for n in names]  # want "PHF001: .*cannot be wrapped automatically"
split = AutoModelForCausalLM.from_pretrained("x", device_map={"embed": 0, "lm_head": 1})  # want "PHF001: .*spreads the model over several devices"
offload = AutoModelForCausalLM.from_pretrained("x", device_map={"": "cuda:0", "lm_head": "cpu"})  # want "PHF001: .*offloads it"
if fast: m = AutoModelForCausalLM.from_pretrained("x", device_map="cuda")  # want "PHF001: .*cannot be wrapped"
