import pytest
import torch


def f(x):
    return x * 2


def test_matches_cpu():  # want "PDX012: `test_matches_cpu` compares CUDA with the CPU"
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.cuda()).cpu())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_guarded():
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.cuda()).cpu())


def test_cuda_only():
    x = torch.randn(8).cuda()
    assert f(x).sum() == 0


def helper_compare(x):
    return f(x.cuda()).cpu()


def test_mentioned_in_text():
    """Compares a run on cuda with the cpu."""
    # cuda and cpu, in a comment
    x = torch.randn(8)
    print("cuda is not used here", "cuda_rng")
    assert torch.allclose(f(x), f(x).cpu())


def test_device_string():  # want "PDX012: `test_device_string` compares CUDA with the CPU"
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.to("cuda:0")).cpu())


def test_fstring_device(rank):  # want "PDX012: `test_fstring_device` compares CUDA with the CPU"
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x.to(f"cuda:{rank}")).cpu())
