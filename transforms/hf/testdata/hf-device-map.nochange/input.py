"""from_pretrained(name, device_map="cuda") in a docstring is prose."""
import torch
from transformers import AutoModel

cpu_model = AutoModel.from_pretrained("bert-base-uncased", device_map="cpu")
chosen = AutoModel.from_pretrained("bert-base-uncased", device_map=args.device_map)
plain = AutoModel.from_pretrained("bert-base-uncased")
with torch.device("tpu"):
    ready = AutoModel.from_pretrained("bert-base-uncased")
kwargs = {"device_map": "cuda"}  # a dict key, not a call
# AutoModel.from_pretrained(name, device_map="cuda")
