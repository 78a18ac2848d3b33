import pytest
import torch


def f(x):
    return x * 2


def test_matches_cpu():
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.to("tpu")).cpu())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_guarded():
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.to("tpu")).cpu())


def test_cuda_only():
    x = torch.randn(8).to("tpu")
    assert f(x).sum() == 0


def helper_compare(x):
    return f(x.to("tpu")).cpu()
