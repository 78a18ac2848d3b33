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


def f(x):
    return x * 2


def test_matches_cpu():
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.cuda()).cpu())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_guarded():
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.to(DEVICE)).cpu())


def test_cuda_only():
    x = torch.randn(8).to(DEVICE)
    assert f(x).sum() == 0


def helper_compare(x):
    return f(x.to(DEVICE)).cpu()
