"""Triton launch capture: the repository's own tests, run by pytest under
Triton's interpreter (TRITON_INTERPRET=1) on the CPU, with every kernel
launch (`kernel[grid](...)`) recorded.

    python -m pallasify_harness.triton_capture --root REPO --import-root src \\
        --package liger_kernel --package test --max 4 --out capture.json \\
        test/transformers/test_rms_norm.py ...

Tests that use only what the tree has run first (those calling the tree's
own names before the others), tests marked xfail last. A test function whose earlier cases launched only kernels that already have
--max launches recorded is skipped (its other parametrizations would add
none), as is every test once its file's tests (after collection) have run
--per-file seconds; one test
runs at most --per-test seconds. Each test file runs in this one process (pytest.main), so the hooks hold for
all of them. Per launch of a kernel (at most --max per kernel), the record
holds the kernel's name, the grid as resolved, the constexpr values, and per
argument: a tensor's shape, dtype, strides, storage extent (elements from
its first one to its last one reached), whether the launch wrote it, and
for an integer tensor its smallest and largest value; a scalar's value.
Whether the interpreter finished the launch is `ok` (else `error`).

The device is the CPU: no accelerator back-end is auto-loaded by torch, CUDA
is hidden, and the stand-ins below answer device probes with "cpu".

Stand-ins (appended LAST to sys.meta_path: a real module always wins) let
tests import what a checked-out subset of a repository lacks, without
changing what any op computes: a module under one of the tree's own
packages (--package) or a top-level module the tests import that the
Python environment lacks is a stand-in module: a constant is a string naming
itself, a class cannot be built (StandInError: the test fails), any other
function, an assertion helper too, returns None (a test that passed having
called one is counted "standin", not "passed"), except device probes
(`infer_device*`, `get_device*`: "cpu"; `IS_<X>_AVAILABLE`, `is_<x>_available`:
False), seeding helpers (`set_seed`, `seed_everything`: seed torch, random
and numpy), and `supports_bfloat16` (False: on the CPU the tests' bfloat16
cases are skipped, as the repository's own helper does off CUDA).
"""

from __future__ import annotations

import os
import sys

# Before torch or triton is imported: the interpreter, the CPU only.
os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import importlib.abc  # noqa: E402
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402


class StandInError(ImportError):
    """A stand-in class or assertion was used: the tree (or the environment) lacks it."""


# The stand-in names the running test called (a test that passed having
# called one is counted "standin", not "passed").
CALLED = []


def _absent_function(qual):
    def absent(*_a, **_k):
        CALLED.append(qual)

    absent.__name__ = qual.rpartition(".")[2]
    absent.__qualname__ = qual
    absent.__pallasify_standin__ = True
    return absent


def _absent_class(qual):
    """A class the tree lacks: it can be built (a config object keeps its
    keyword arguments), but calling an instance or reading a name it was not
    given raises StandInError, and so the test fails."""

    def init(self, *_a, **kw):
        CALLED.append(qual)
        self.__dict__.update(kw)

    def absent(self, *_a, **_k):
        raise StandInError(f"{qual} is not in the tree (a pallasify capture stand-in)")

    def getattr_(self, name):
        raise StandInError(f"{qual}.{name} is not in the tree (a pallasify capture stand-in)")

    return type(qual.rpartition(".")[2], (), {"__init__": init, "__call__": absent, "__getattr__": getattr_,
                                               "__qualname__": qual, "__pallasify_standin__": True})


def _seed(seed=42, *_a, **_k):
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _stand_in_value(modname, name):
    """A stand-in module's name: device probes answer for the CPU, seeding
    helpers seed, a constant is a string naming itself, a class cannot be
    built, any other function (an assertion helper too, so the test goes on
    to its backward pass) returns None."""
    low, qual = name.lower(), modname + "." + name
    if low.startswith(("infer_device", "get_device")):  # infer_device, infer_device_arch, get_device_type, ...
        return lambda *_a, **_k: "cpu"
    if name.startswith("IS_") and name.endswith("_AVAILABLE"):
        return False
    if low.startswith("is_") and low.endswith("_available"):
        return lambda *_a, **_k: False
    if low in ("set_seed", "seed_everything"):
        return _seed
    if low == "supports_bfloat16":
        return lambda *_a, **_k: False
    if name.isupper():
        return f"<pallasify stand-in {qual}>"
    if name[:1].isupper():
        return _absent_class(qual)
    return _absent_function(qual)


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _stand_in_value(self.__name__, name)
        setattr(self, name, value)
        return value


def _is_standin(v):
    """A stand-in module, class or function, or a stand-in class's instance."""
    try:
        if isinstance(v, type):
            return "__pallasify_standin__" in vars(v)
        return bool(getattr(v, "__pallasify_standin__", False)) or "__pallasify_standin__" in vars(type(v))
    except Exception:  # noqa: BLE001 - a stand-in instance raises on unknown names
        return True


def _module_of(v):
    try:
        return getattr(v, "__module__", "") or ""
    except Exception:  # noqa: BLE001
        return ""


class StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Gives a stand-in module for what no other finder found, under prefixes."""

    def __init__(self, prefixes):
        self.prefixes = set(prefixes)
        self.used = []

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.prefixes:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        mod = _StandInModule(spec.name)
        mod.__path__ = []
        mod.__version__ = "0.0.0"  # a version gate takes its oldest branch
        mod.__pallasify_standin__ = True
        return mod

    def exec_module(self, module):
        self.used.append(module.__name__)


def describe(v, after=None):
    """A launch argument: a tensor by shape, dtype, strides and extent."""
    import torch

    if isinstance(v, torch.Tensor):
        d = {"tensor": True, "shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch."),
             "strides": list(v.stride()), "contiguous": bool(v.is_contiguous()),
             "extent": 1 + sum((s - 1) * st for s, st in zip(v.shape, v.stride())) if v.numel() else 0}
        if not v.dtype.is_floating_point and not v.dtype.is_complex and v.dtype != torch.bool and v.numel():
            d["min"], d["max"] = int(v.min()), int(v.max())
        return d
    for kind in (bool, int, float, str):
        if isinstance(v, kind):
            return {"scalar": kind.__name__, "value": v}
    if v is None:
        return {"scalar": "none", "value": None}
    return {"scalar": "other", "value": repr(v)[:80]}


def _tensor_base(t):
    """The elements a kernel can reach from t's first one (its extent), flat."""
    import torch

    n = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride())) if t.numel() else 0
    return torch.as_strided(t, (n,), (1,))


class Recorder:
    """Wraps the interpreter's GridExecutor so launches are recorded."""

    def __init__(self, max_per_kernel):
        self.max = max_per_kernel
        self.launches = []
        self.counts = {}
        self.test = ""
        self.kernels = set()  # what the running test launched

    def install(self):
        import inspect

        import torch
        from triton.runtime import interpreter

        orig = interpreter.GridExecutor.__call__
        rec = self

        def call(ex, *args, **kwargs):
            name = getattr(ex.fn, "__name__", "?")
            rec.kernels.add(name)
            if rec.counts.get(name, 0) >= rec.max:
                return orig(ex, *args, **kwargs)
            rec.counts[name] = rec.counts.get(name, 0) + 1
            spec = inspect.getfullargspec(ex.fn)
            kw = {k: v for k, v in kwargs.items() if k in spec.args or k in spec.kwonlyargs}
            try:
                bound = inspect.getcallargs(ex.fn, *args, **kw)
            except TypeError:
                bound = {}
            entry = {"kernel": name, "module": getattr(ex.fn, "__module__", "") or "", "test": rec.test, "grid": None, "args": {}, "constexprs": {}, "order": [],
                     "ok": False}
            before = {}
            for pname in spec.args:
                if pname not in bound:
                    continue
                val = bound[pname]
                if pname in ex.constexprs:
                    entry["constexprs"][pname] = describe(val)
                    continue
                entry["order"].append(pname)
                entry["args"][pname] = describe(val)
                if isinstance(val, torch.Tensor) and val.numel():
                    before[pname] = _tensor_base(val).clone()
            grid = ex.grid

            def resolved(meta):
                g = grid(meta) if callable(grid) else grid
                entry["grid"] = [int(x) for x in tuple(g)]
                return g

            ex.grid = resolved
            rec.launches.append(entry)
            try:
                out = orig(ex, *args, **kwargs)
                entry["ok"] = True
                return out
            except Exception as e:  # the test sees it; the record says it
                entry["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
                raise
            finally:
                ex.grid = grid
                for pname, old in before.items():
                    now = _tensor_base(bound[pname])
                    entry["args"][pname]["written"] = not torch.equal(old, now) if old.dtype == now.dtype else True
                # constexprs an autotune config or heuristic supplied reach the executor as kwargs
                for k, v in kwargs.items():
                    if k in ex.constexprs and k not in entry["constexprs"]:
                        entry["constexprs"][k] = describe(v)

        interpreter.GridExecutor.__call__ = call


class BackwardProbe:
    """The backward probe: a tree's autograd.Function called by a test (its
    first --max calls per class) is called again at once on detached copies
    of its inputs with gradients on, and differentiated with seeded random
    output gradients, so its backward kernels launch at the test's shapes
    even where the test fails before its own backward pass (a stand-in
    reference returned None). Errors of the probe are recorded, never
    raised; the test's own call is untouched."""

    def __init__(self, packages, max_calls):
        self.packages, self.max = tuple(p + "." for p in packages), max_calls
        self.counts, self.probes = {}, []
        self.active = False

    def install(self):
        import torch

        desc = torch.autograd.Function.__dict__["apply"]  # a classmethod (or its C descriptor)

        def orig(cls, *args, **kwargs):
            return desc.__get__(None, cls)(*args, **kwargs)

        probe = self

        def apply(cls, *args, **kwargs):
            out = orig(cls, *args, **kwargs)
            mod = getattr(cls, "__module__", "") or ""
            name = mod + "." + cls.__qualname__
            if not probe.active and mod.startswith(probe.packages) and probe.counts.get(name, 0) < probe.max:
                probe.counts[name] = probe.counts.get(name, 0) + 1
                probe.run(orig, cls, name, args, kwargs)
            return out

        torch.autograd.Function.apply = classmethod(apply)

    def run(self, orig, cls, name, args, kwargs):
        import torch

        rec = {"function": name, "ok": False}
        self.probes.append(rec)
        self.active = True
        try:
            def copy(a):
                if isinstance(a, torch.Tensor):
                    c = a.detach().clone()
                    return c.requires_grad_(True) if c.is_floating_point() else c
                return a

            cargs = [copy(a) for a in args]
            ckw = {k: copy(v) for k, v in kwargs.items()}
            out = orig(cls, *cargs, **ckw)
            outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                    if isinstance(o, torch.Tensor) and o.requires_grad]
            if not outs:
                rec["error"] = "no output tracks a gradient"
                return
            gen = torch.Generator().manual_seed(0)
            grads = [torch.randn(o.shape, generator=gen).to(o.dtype) for o in outs]
            torch.autograd.backward(outs, grads)
            rec["ok"] = True
        except Exception as e:  # noqa: BLE001 - a probe reports, never raises
            rec["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        finally:
            self.active = False


class CapturePlugin:
    """pytest hooks: the current test's id, a time limit per test."""

    def __init__(self, rec, per_test_s, per_file_s, packages):
        self.rec, self.per_test_s, self.per_file_s = rec, per_test_s, per_file_s
        self.deadline = time.monotonic() + per_file_s
        self.packages = tuple(p + "." for p in packages) or ("\0",)
        self.launched = {}  # test function -> the kernels its cases launched
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "standin": 0}
        self.first_error = ""

    def pytest_collection_modifyitems(self, session, config, items):
        """Tests that use only what the tree has run first, those calling
        the tree's own names before the others, tests expected to fail
        (xfail) last: a file's time budget then goes to the tests that reach
        its kernels."""

        def key(item):
            fn = getattr(item, "function", None)
            glb = getattr(fn, "__globals__", {})
            names = set()
            stack = [getattr(fn, "__code__", None)]
            while stack:
                code = stack.pop()
                if code is None:
                    continue
                names.update(code.co_names)
                stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
            used = [glb[n] for n in names if n in glb]
            standin = any(_is_standin(v) for v in used)
            tree = any(not _is_standin(v) and _module_of(v).startswith(self.packages) for v in used)
            return (item.get_closest_marker("xfail") is not None, standin, not tree)

        items.sort(key=key)
        self.deadline = time.monotonic() + self.per_file_s  # the budget is for running tests, not collecting them

    def pytest_runtest_setup(self, item):
        import pytest

        if time.monotonic() > self.deadline:
            pytest.skip("pallasify capture: the file's time budget is spent")
        fn = getattr(item, "originalname", item.name)
        seen = self.launched.get(fn)
        if seen and all(self.rec.counts.get(k, 0) >= self.rec.max for k in seen):
            pytest.skip("pallasify capture: every kernel this test launched has its launches recorded")
        self.rec.test, self.rec.kernels = item.nodeid, self.launched.setdefault(fn, set())
        CALLED.clear()

    def pytest_runtest_call(self, item):
        def expire(*_):
            raise TimeoutError(f"pallasify capture: {item.nodeid} ran past {self.per_test_s}s")

        signal.signal(signal.SIGALRM, expire)
        signal.alarm(self.per_test_s)

    def pytest_runtest_teardown(self, item):
        signal.alarm(0)

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            outcome = "standin" if report.outcome == "passed" and CALLED else report.outcome
            self.counts[outcome] = self.counts.get(outcome, 0) + 1
            if report.outcome == "failed" and not self.first_error:
                self.first_error = _last_error(str(report.longrepr))

    def pytest_collectreport(self, report):
        if report.outcome == "failed":
            self.counts["failed"] += 1
            if not self.first_error:
                self.first_error = _last_error(str(report.longrepr))


def _last_error(text):
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("E ") or "Error" in ln:
            return " ".join(ln.removeprefix("E").split())[:300]
    return lines[-1][:300] if lines else ""


def _missing_top_levels(tests, packages):
    """Top-level modules the tests import that this Python lacks (the tree's own packages aside)."""
    import ast

    out = set()
    for t in tests:
        try:
            with open(t, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError):
            continue
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            for n in names:
                top = n.split(".")[0]
                if top in packages or top in out:
                    continue
                try:
                    found = importlib.util.find_spec(top) is not None
                except (ImportError, ValueError):
                    found = False
                if not found:
                    out.add(top)
    return sorted(out)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="pallasify_harness.triton_capture", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="the tree (a copy: tests may write into it)")
    ap.add_argument("--import-root", action="append", default=[], help="a directory of the tree put on sys.path")
    ap.add_argument("--package", action="append", default=[], help="a top-level package of the tree")
    ap.add_argument("--max", type=int, default=4, help="launches recorded per kernel")
    ap.add_argument("--per-test", type=int, default=60, help="seconds one test may run")
    ap.add_argument("--per-file", type=int, default=240, help="seconds of tests per file")
    ap.add_argument("--out", required=True)
    ap.add_argument("tests", nargs="+")
    a = ap.parse_args(argv)

    root = os.path.abspath(a.root)
    os.chdir(root)
    for r in reversed([root] + [os.path.join(root, d) for d in a.import_root]):
        if r not in sys.path:
            sys.path.insert(0, r)
    tests = [os.path.join(root, t) for t in a.tests]
    missing = _missing_top_levels(tests, set(a.package))
    finder = StandInFinder(list(a.package) + missing)
    sys.meta_path.append(finder)
    # a top-level module no finder found at the start stays a stand-in: a
    # directory of that name a test run puts on sys.path later (pytest's
    # test/transformers) is no namespace package for it
    absent = StandInFinder(missing)
    absent.used = finder.used
    sys.meta_path.insert(0, absent)
    res = {"schema": "pallasify.triton-capture/v1", "tests": [], "launches": [], "probes": [], "standins": [], "error": ""}
    try:
        import pytest
        import torch  # noqa: F401
        import triton  # noqa: F401

        from .triton_ref import (
            install_dtype_call,
            install_float_args,
            install_libdevice,
        )

        rec = Recorder(a.max)
        rec.install()
        probe = BackwardProbe(a.package, a.max)
        probe.install()
        install_libdevice(set())
        install_float_args()
        install_dtype_call()
        for t, rel in zip(tests, a.tests):
            plugin = CapturePlugin(rec, a.per_test, a.per_file, a.package)
            t0 = time.monotonic()
            code = pytest.main([t, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", root,
                                "-W", "ignore"], plugins=[plugin])
            res["tests"].append({"file": rel, "exit": int(code), **plugin.counts, "error": plugin.first_error,
                                 "seconds": round(time.monotonic() - t0, 2)})
        res["launches"] = rec.launches
        res["probes"] = probe.probes
    except Exception as e:  # noqa: BLE001 - the capture reports, never raises
        res["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"
    res["standins"] = sorted(set(finder.used))
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
