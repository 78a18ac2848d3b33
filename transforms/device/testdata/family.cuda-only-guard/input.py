import selective_scan_cuda
import torch
from torch.utils.cpp_extension import load

from ._C import nms
from .utils import ext_loader

ext = load(name="upfirdn", sources=["upfirdn.cu"])
ext_module = ext_loader.load_ext("_ext", ["pick_mask_forward"])


# CUDA-only bodies: each guard stays CUDA-only (PCU012).
def upfirdn(x, impl="cuda"):
    if impl == "cuda" and x.device.type == "cuda":
        return ext.upfirdn(x)
    return x * 2


def scan(u, delta):
    if u.device.type == "cuda":
        return selective_scan_cuda.fwd(u, delta)
    return u + delta


class Block(torch.nn.Module):
    def forward(self, x):
        if x.device.type == "cuda":
            return self._fast(x)
        return x

    def _fast(self, x):
        with torch.cuda.stream(torch.cuda.Stream()):
            return x * 2


def pick(device):
    if str(device) != "cpu" and "cuda" in str(device):
        torch.backends.cudnn.benchmark = True
    return device


# Device-agnostic bodies: rewritten as before.
def place(x, device):
    if device.type == "cuda":
        x = x.to("cuda", non_blocking=True)
    return x


def wired(x):
    if x.device.type == "cuda":
        return x.sum() if x.device.type == "tpu" else ext.upfirdn(x)
    return x


def to_gpu(x):
    if x.is_cuda:
        return x.cuda()
    return x


def psa(input):
    if input.device.type == "cuda":
        return ext_module.pick_mask_forward(input)
    return input


def psa_wired(input):
    if input.device.type == "cuda":
        if input.device.type == "tpu":
            return input * 2
        else:
            return ext_module.pick_mask_forward(input)
    return input


def nms_op(boxes):
    if boxes.is_cuda:
        return nms(boxes)
    return boxes


def up(x, ops):
    if x.is_cuda:
        return ops.upfirdn2d_cuda(x)
    return x
