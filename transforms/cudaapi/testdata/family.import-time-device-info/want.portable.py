import pytest
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

CAP = torch.cuda.get_device_capability()
NAME = torch.get_device_module(DEVICE).get_device_name(0) if DEVICE.type != "cpu" else "cpu"
TOTAL = torch.get_device_module(DEVICE).get_device_properties(0).total_memory
SUPPORTS = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)


def describe(x, name=(torch.get_device_module(DEVICE).get_device_name() if DEVICE.type != "cpu" else "cpu")):
    # Run time: the tpu target asks torch.tpu.
    return name, (torch.get_device_module(DEVICE).get_device_name(0) if DEVICE.type != "cpu" else "cpu"), torch.cuda.get_device_capability()


class Info:
    props = torch.get_device_module(DEVICE).get_device_properties(0)


@pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 8, reason="needs sm80")
def test_bf16():
    pass
