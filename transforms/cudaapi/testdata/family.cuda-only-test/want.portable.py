import unittest

import pytest
import torch

from tests.conftest import RunIf


@RunIf(min_cuda_gpus=2)
def test_two_devices():
    x = torch.ones(2, device="cuda:1")
    assert str(x.device) == "cuda:1"
    torch.cuda.synchronize()


@pytest.mark.cuda
class TestKernels:
    def test_ones(self):
        assert torch.ones(1).cuda().is_cuda


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_streams():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = torch.ones(2, device="cuda")
    assert y.sum() == 2


@pytest.mark.skipif(not (torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in ("cuda", "tpu")), reason="needs an accelerator")
def test_agnostic():
    y = torch.ones(2, device="cuda")
    assert y.sum() == 2


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_param(device):
    assert torch.ones(1, device=device).sum() == 1


class TestUnit(unittest.TestCase):
    @unittest.skipUnless(torch.cuda.is_available(), "CUDA")
    def test_props(self):
        assert torch.cuda.get_device_properties(0).major >= 7


def helper_on_gpu():
    return torch.ones(1, device="cuda")
