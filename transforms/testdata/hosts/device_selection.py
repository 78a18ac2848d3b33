# hosts: cpu mps cuda
# The device-selection idiom, rewritten as a whole (DEVICE, DEVICE.type,
# device_at(i)), chooses on every host that is not a TPU what it chose
# before: CUDA where CUDA is, else the CPU (a Mac included).
import sys

import torch

cpu_flag = "--cpu" in sys.argv
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
name = "cuda" if torch.cuda.is_available() else "cpu"
negated = "cpu" if not torch.cuda.is_available() else "cuda"
first = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
both = torch.device("cuda") if torch.cuda.device_count() > 0 else torch.device("cpu")
flagged = torch.device("cuda" if torch.cuda.is_available() and not cpu_flag else "cpu")
rank = 0
ranked = f"cuda:{rank}" if torch.cuda.is_available() else "cpu"
print("device", device, type(device).__name__)
print("name", name, type(name).__name__)
print("negated", negated)
print("first", first)
print("both", both)
print("flagged", flagged)
print("ranked", ranked, type(ranked).__name__)
print("to", torch.device("cuda" if torch.cuda.is_available() else "cpu").type)
