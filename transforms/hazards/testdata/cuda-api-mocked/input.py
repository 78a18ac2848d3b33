from unittest import mock

import pytest
import torch


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # want "PDX013: the test replaces `torch.cuda.is_available`"


def test_count(monkeypatch):
    monkeypatch.setattr("torch.cuda.device_count", lambda: 4)  # want "PDX013: .*torch.cuda.device_count"
    monkeypatch.setattr(torch.cuda, "Stream", object)
    monkeypatch.setattr(torch, "compile", lambda f: f)


@mock.patch("torch.cuda.get_device_properties")  # want "PDX013: .*get_device_properties"
def test_props(props):
    with mock.patch.object(torch.cuda, "synchronize"):  # want "PDX013: .*synchronize"
        pass
    with mock.patch("torch.cuda.graphs.CUDAGraph"):
        pass
