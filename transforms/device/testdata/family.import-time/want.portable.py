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


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


DEV = DEVICE
ZEROS = torch.zeros(4, device=DEVICE)
NOISE = torch.randn(2, 2).to(DEVICE)
BUF = torch.ones(3).to(device_at(0))
MASK = torch.empty(2, dtype=torch.float32, device=DEVICE)
if torch.__version__ >= "2":
    ALT = device_at(0)
try:
    STATE = torch.load("ckpt.pt", map_location=DEVICE)
except FileNotFoundError:
    STATE = None
with torch.no_grad():
    TABLE = {name: torch.empty(2, device=DEVICE) for name in ("a", "b")}


def f(x, device=device_at(0)):
    return x.to(device)


def g(x, out=torch.empty(2, device=DEVICE)):
    return x


def run_time(x):
    return x.to(DEVICE)


class A:
    dev = DEVICE

    def m(self, x):
        return x.to(DEVICE)


@pytest.mark.parametrize("d", [pytest.param(DEVICE)])
def test_x(d):
    pass


pick = lambda x, d=DEVICE: x.to(d)
on = lambda x: x.to(DEVICE)


def make():
    return DEVICE


def make_twice():
    return make()


DEFAULT = make_twice()


class Holder:
    def __init__(self):
        self.device = DEVICE

    def later(self):
        return DEVICE


HOLDER = Holder()


def later():
    return DEVICE


def outer():
    def inner(x, dev=DEVICE):
        return x.to(dev)

    return inner


if __name__ == "__main__":
    main_dev = DEVICE
    print(torch.zeros(1, device=DEVICE))
