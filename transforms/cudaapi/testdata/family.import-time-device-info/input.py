import pytest
import torch

CAP = torch.cuda.get_device_capability()
NAME = torch.cuda.get_device_name(0)
TOTAL = torch.cuda.get_device_properties(0).total_memory
SUPPORTS = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)


def describe(x, name=torch.cuda.get_device_name()):
    # Run time: the tpu target asks torch.tpu.
    return name, torch.cuda.get_device_name(0), torch.cuda.get_device_capability()


class Info:
    props = torch.cuda.get_device_properties(0)


@pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 8, reason="needs sm80")
def test_bf16():
    pass
