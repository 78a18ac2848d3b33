"""Runs Python files as __main__ on simulated hosts (hosts_test.go).

usage: host.py HOST:FILE:OUT ...

Each job runs in a child forked after torch is imported (one import for all
jobs), with its stdout in OUT; a job that raises leaves its traceback's last
line in OUT after "FAILED: ". HOST is "cpu" (this machine as it is: PyPI's CUDA build of torch without a GPU,
so torch.cuda.is_available() is False), "mps" (an Apple-silicon Mac: torch
reports an MPS accelerator and no CUDA) or "cuda" (a one-GPU CUDA machine).
mps and cuda only change what torch's probes answer, so the cases run there
must make decisions (device types, flags, dtypes picked) without allocating on
the simulated device. Only what the file prints to stdout is compared.
"""

import os
import runpy
import sys
import warnings

import torch


def answer(orig, value):
    """A probe that returns value, standing in for orig (torch._dynamo looks
    through some probes' __wrapped__)."""

    def probe(*args, **kwargs):
        return value

    probe.__wrapped__ = getattr(orig, "__wrapped__", orig)
    return probe


def simulate(host):
    if host == "cpu":
        return
    if host not in ("mps", "cuda"):
        raise SystemExit(f"unknown host {host!r}")
    dev = torch.device(host)
    torch.accelerator.is_available = answer(torch.accelerator.is_available, True)
    torch.accelerator.current_accelerator = answer(torch.accelerator.current_accelerator, dev)
    torch.accelerator.device_count = answer(torch.accelerator.device_count, 1)
    torch.cuda.is_available = answer(torch.cuda.is_available, host == "cuda")
    torch.cuda.device_count = answer(torch.cuda.device_count, 1 if host == "cuda" else 0)
    torch.backends.mps.is_available = answer(torch.backends.mps.is_available, host == "mps")


def job(host, path, out):
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    try:
        simulate(host)
        warnings.simplefilter("ignore")
        runpy.run_path(path, run_name="__main__")
    except BaseException as e:  # the failure is the job's output
        print(f"FAILED: {type(e).__name__}: {e}".splitlines()[0])
    sys.stdout.flush()
    os._exit(0)


def main():
    for spec in sys.argv[1:]:
        host, path, out = spec.split(":", 2)
        pid = os.fork()
        if pid == 0:
            job(host, path, out)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
