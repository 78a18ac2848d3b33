import torch

FUSED_DEVICES = ["cuda", "xpu", "hpu"]
BACKENDS = ("cuda", "tpu")
NAMES = ["cuda", "fast"]
ONE = ["cuda"]


def fused_ok(p):
    ok = p.device.type in ("cuda", "xpu")
    return ok and p.device.type in FUSED_DEVICES


def cap(supports_xla=True):
    devices = {"cuda", "xla"}
    if supports_xla:
        devices.add(torch._C._get_privateuse1_backend_name())
    return devices
