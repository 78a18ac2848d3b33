"""What the simulated TPU host saw: recorded as it runs, written as JSON at exit."""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__))
_CWD = os.getcwd()


def _skipped_dirs() -> list[str]:
    dirs = [_PKG_DIR]
    for mod in ("torch", "jax", "jaxlib", "numpy"):
        m = sys.modules.get(mod)
        f = getattr(m, "__file__", None)
        if f:
            dirs.append(os.path.dirname(os.path.abspath(f)))
    return dirs


def _is_framework(path: str, skipped: list[str]) -> bool:
    if path.startswith("<"):
        return True
    p = os.path.abspath(path)
    for d in skipped:
        if p == d or p.startswith(d + os.sep):
            return True
    if p.startswith(_STDLIB_DIR + os.sep) and "-packages" + os.sep not in p:
        return True
    return False


def rel(path: str) -> str:
    p = os.path.abspath(path)
    if p.startswith(_CWD + os.sep):
        return os.path.relpath(p, _CWD)
    return p


def site(frame=None) -> str:
    """The first Python frame outside torch, jax, numpy, the standard library and this package,
    as "path:line" (relative to the working directory where it is under it); "" when none (an op
    run by the autograd engine's thread has no user frame)."""
    skipped = _skipped_dirs()
    f = frame if frame is not None else sys._getframe(1)
    while f is not None:
        path = f.f_code.co_filename
        if not _is_framework(path, skipped):
            return f"{rel(path)}:{f.f_lineno}"
        f = f.f_back
    return ""


def site_of_traceback(tb) -> str:
    """The innermost user frame of a traceback (where the failing call was made)."""
    skipped = _skipped_dirs()
    best = ""
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        if not _is_framework(path, skipped):
            best = f"{rel(path)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return best


class Report:
    """Counts by key, first call site kept; thread-safe; written once at exit."""

    def __init__(self, path: str | None, devices: int):
        self.path = path
        self.devices = devices
        self._lock = threading.Lock()
        self._written = False
        self.unsupported_ops: dict[str, dict] = {}
        self.cuda_only_calls: dict[tuple[str, str], dict] = {}
        self.custom_cuda_ops: dict[str, dict] = {}
        self.compiles: list[dict] = []
        self.device_mixups: dict[tuple[str, str], dict] = {}
        self.jax_ops: dict[str, dict] = {}
        self.ops: dict[str, dict] = {}
        self.precision = ""
        self.fallback = ""
        self.errors: list[str] = []

    def op(self, name: str, cls: str, where: str) -> None:
        with self._lock:
            e = self.unsupported_ops.get(name)
            if e is None:
                self.unsupported_ops[name] = {"op": name, "count": 1, "class": cls, "site": where}
            else:
                e["count"] += 1
                if not e["site"] and where:
                    e["site"] = where

    def any_op(self, name: str, cls: str, where: str) -> None:
        """Every aten op the command ran, on any device (PALLASIFY_TPUHOST_ALLOPS=1: `pallasify ops`)."""
        with self._lock:
            e = self.ops.get(name)
            if e is None:
                self.ops[name] = {"op": name, "count": 1, "class": cls, "site": where}
            else:
                e["count"] += 1
                if not e["site"] and where:
                    e["site"] = where

    def cuda_call(self, api: str, where: str, error: str) -> None:
        with self._lock:
            key = (api, where)
            e = self.cuda_only_calls.get(key)
            if e is None:
                self.cuda_only_calls[key] = {"api": api, "count": 1, "site": where, "error": error}
            else:
                e["count"] += 1

    def custom_cuda(self, name: str, where: str) -> None:
        with self._lock:
            e = self.custom_cuda_ops.get(name)
            if e is None:
                self.custom_cuda_ops[name] = {"op": name, "count": 1, "site": where}
            else:
                e["count"] += 1

    def compile(self, backend: str, dynamic, where: str) -> None:
        with self._lock:
            self.compiles.append({"backend": backend, "dynamic": dynamic, "site": where})

    def mixup(self, op: str, devices: str, where: str, error: str) -> None:
        with self._lock:
            key = (op, where)
            e = self.device_mixups.get(key)
            if e is None:
                self.device_mixups[key] = {"op": op, "devices": devices, "count": 1, "site": where, "error": error}
            else:
                e["count"] += 1

    def jax_op(self, name: str) -> None:
        with self._lock:
            e = self.jax_ops.get(name)
            if e is None:
                self.jax_ops[name] = {"name": name, "count": 1}
            else:
                e["count"] += 1

    def data(self) -> dict:
        with self._lock:
            return {
                "unsupported_ops": list(self.unsupported_ops.values()),
                "cuda_only_calls": list(self.cuda_only_calls.values()),
                "custom_cuda_ops": list(self.custom_cuda_ops.values()),
                "compiles": list(self.compiles),
                "device_mixups": list(self.device_mixups.values()),
                "jax_ops": list(self.jax_ops.values()),
                "ops": list(self.ops.values()),
                "pid": os.getpid(),
                "argv": list(sys.argv),
                "devices": self.devices,
                "precision": self.precision,
                "fallback": self.fallback,
                "errors": list(self.errors),
            }

    def write(self) -> None:
        if not self.path or self._written:
            return
        self._written = True
        data = self.data()
        path = self.path
        if os.path.isdir(path):
            # A directory: one report per process (a command that starts several Pythons, pytest's
            # workers, torchrun's ranks); the wrapper merges them.
            path = os.path.join(path, f"report-{os.getpid()}.json")
        d = os.path.dirname(os.path.abspath(path))
        tmp = os.path.join(d, f".{os.path.basename(path)}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w") as f:
                json.dump(data, f, indent=1)
                f.write("\n")
            os.replace(tmp, path)
        except OSError as e:
            print(f"pallasify_tpuhost: cannot write the report {self.path}: {e}", file=sys.stderr)

    def install(self) -> None:
        """Writes at interpreter exit (normal end, sys.exit, an uncaught exception, SIGTERM)."""
        atexit.register(self.write)
        prev_hook = sys.excepthook

        def hook(tp, val, tb):
            record_cuda_failure(self, val, tb)
            self.write()
            prev_hook(tp, val, tb)

        sys.excepthook = hook
        try:
            import signal

            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):

                def on_term(signum, frame):
                    self.write()
                    signal.signal(signum, signal.SIG_DFL)
                    os.kill(os.getpid(), signum)

                signal.signal(signal.SIGTERM, on_term)
        except (ValueError, OSError):
            pass


_CUDA_MARKERS = (
    "Found no NVIDIA driver",
    "Torch not compiled with CUDA",
    "CUDA driver version is insufficient",
    "No CUDA GPUs are available",
    "CUDA error",
)


def is_cuda_failure(exc: BaseException) -> bool:
    msg = str(exc)
    return any(m in msg for m in _CUDA_MARKERS)


def record_cuda_failure(rep: Report, exc: BaseException, tb) -> None:
    """An uncaught exception that is CUDA's "no GPU here" is a CUDA-only call reached (when no
    wrapper recorded it already)."""
    if exc is None or getattr(exc, "_pallasify_recorded", False) or not is_cuda_failure(exc):
        return
    where = site_of_traceback(tb)
    api = "torch (CUDA device)"
    rep.cuda_call(api, where, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
