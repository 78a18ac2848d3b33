"""Docstring: call torch.device("cuda") and x.to("cuda")."""
import logging

import torch

# torch.device("cuda")
logging.info("moving to cuda")
print("cuda")
table = {"cuda": 1, "cpu": 0}
backend_name = "cuda"
x = torch.zeros(3, device=torch.device("cpu"))
y = x.to("cpu")
name = f"cuda-{version}"
s = "cuda:abc"
dev = torch.device(DEVICE.type, 1)
p = pipeline("text-generation", device="cuda")
m = AutoModel.from_pretrained("m", device_map="cuda")
b = b"cuda"
