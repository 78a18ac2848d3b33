import pytest
import torch

DEV = torch.device("cuda")
ZEROS = torch.zeros(4, device="cuda")
NOISE = torch.randn(2, 2).cuda()
BUF = torch.ones(3).to("cuda:0")
MASK = torch.cuda.FloatTensor(2)
if torch.__version__ >= "2":
    ALT = torch.device("cuda", 0)
try:
    STATE = torch.load("ckpt.pt", map_location="cuda")
except FileNotFoundError:
    STATE = None
with torch.no_grad():
    TABLE = {name: torch.empty(2, device="cuda") for name in ("a", "b")}


def f(x, device=torch.device("cuda:0")):
    return x.to(device)


def g(x, out=torch.empty(2, device="cuda")):
    return x


def run_time(x):
    return x.to(torch.device("cuda"))


class A:
    dev = torch.device("cuda")

    def m(self, x):
        return x.to("cuda")


@pytest.mark.parametrize("d", [pytest.param(torch.device("cuda"))])
def test_x(d):
    pass


pick = lambda x, d=torch.device("cuda"): x.to(d)
on = lambda x: x.to("cuda")


def make():
    return torch.device("cuda")


def make_twice():
    return make()


DEFAULT = make_twice()


class Holder:
    def __init__(self):
        self.device = torch.device("cuda")

    def later(self):
        return torch.device("cuda")


HOLDER = Holder()


def later():
    return torch.device("cuda")


def outer():
    def inner(x, dev=torch.device("cuda")):
        return x.to(dev)

    return inner


if __name__ == "__main__":
    main_dev = torch.device("cuda")
    print(torch.zeros(1, device="cuda"))
