"""Tests that name cuda only in text: none computes on CUDA."""
import pytest
import torch


def f(x):
    return x * 2


def test_documented():
    """Compares a run on cuda with the cpu."""
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x).cpu())


def test_commented():
    # would compare cuda with the cpu
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x).cpu())


def test_messages():
    x = torch.randn(8)
    assert torch.allclose(f(x), f(x).cpu()), "cuda and cpu differ"
    print({"cuda_rng": 0}, "device", 'on cuda:0')
