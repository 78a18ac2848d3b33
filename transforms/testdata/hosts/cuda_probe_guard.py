# hosts: cpu mps cuda
# A CUDA probe keeps its answer on every host that is not a TPU: on a Mac the
# guarded CUDA path is not taken, device_type does not become "mps", and the
# fused optimizer kernel is chosen exactly where CUDA is.
import torch

if torch.cuda.is_available():
    print("gpu path")
    device_type = "cuda"
else:
    print("cpu path")
    device_type = "cpu"
print("device_type", device_type)


def default_device(device="cuda" if torch.cuda.is_available() else "cpu"):
    return str(device)


print("library default", default_device())

params = [torch.nn.Parameter(torch.zeros(2))]
opt = torch.optim.AdamW(params, lr=0.1, fused=torch.cuda.is_available())
print("fused", opt.defaults["fused"])
dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
print("dtype", dtype)

if torch.cuda.is_available():
    picked = torch.device("cuda:{}".format(0))
elif torch.backends.mps.is_available():
    picked = "mps"
else:
    picked = "cpu"
print("picked", picked)
