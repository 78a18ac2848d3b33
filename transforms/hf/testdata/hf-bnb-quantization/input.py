from transformers import AutoModelForCausalLM, BitsAndBytesConfig

a = AutoModelForCausalLM.from_pretrained("x", load_in_8bit=True)  # want "PHF003: load_in_8bit: bitsandbytes quantization is CUDA-only"
b = AutoModelForCausalLM.from_pretrained(
    "x",
    quantization_config=BitsAndBytesConfig(load_in_4bit=True),  # want "PHF003: BitsAndBytesConfig: "
)
c = AutoModelForCausalLM.from_pretrained("x", load_in_4bit=False)  # disabled: not reported
d = AutoModelForCausalLM.from_pretrained("x", torch_dtype="bfloat16")
