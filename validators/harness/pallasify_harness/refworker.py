"""Reference worker: runs the reference in its own process.

The reference (ref.so through ctypes per the ABI in CONTRACTS.md, or a
plain-Python reference.py) runs in a child process of the harness so that a
crash in the emulated kernel cannot take the harness down and the candidate
never shares an address space with it. Messages are length-prefixed pickles
over stdin/stdout between the harness and this worker (both ours).
"""

from __future__ import annotations

import ctypes
import importlib.util
import pickle
import struct
import sys
import traceback

import numpy as np

from .spec import CTYPES, SpecError, load_spec

# Poison written into reference output buffers before the launch: NaNs with a
# distinctive payload (arithmetic produces canonical NaNs, so a surviving
# payload means the element was never written), integers with a pattern.
POISON_BITS = {
    "float32": (np.uint32, 0x7FA5A5A5),
    "float64": (np.uint64, 0x7FF4A5A5A5A5A5A5),
    "float16": (np.uint16, 0x7E5A),
    "bfloat16": (np.uint16, 0x7FA5),
}
INT_POISON = 0x5A


def poisoned(p, shape):
    dt = p.np_dtype
    if p.dtype in POISON_BITS:
        ut, bits = POISON_BITS[p.dtype]
        return np.full(shape, bits, dtype=ut).view(dt)
    return np.full(int(np.prod(shape, dtype=np.int64)) * dt.itemsize, INT_POISON, dtype=np.uint8).view(dt).reshape(shape)


def count_poison(p, arr) -> int:
    if p.dtype not in POISON_BITS:
        return 0
    ut, bits = POISON_BITS[p.dtype]
    return int((np.ascontiguousarray(arr).view(ut) == bits).sum())


def send(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def recv(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


class SoReference:
    def __init__(self, spec, path):
        self.spec = spec
        self.lib = ctypes.CDLL(path)
        self.fn = self.lib.pallasify_launch
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong), ctypes.c_char_p, ctypes.c_int]
        try:
            nm = self.lib.pallasify_kernel_name
            nm.restype = ctypes.c_char_p
            self.kernel_name = (nm() or b"").decode("utf-8", "replace")
        except AttributeError:
            self.kernel_name = ""

    def run(self, args, shapes, launch):
        spec = self.spec
        bufs, keep, ptrs = {}, [], []
        for p in spec.params:
            if p.role in ("input", "inout"):
                a = np.ascontiguousarray(np.array(args[p.name], dtype=p.np_dtype, copy=True))
                bufs[p.name] = a
                # a NULL parameter is launched as NULL, as the original was
                ptrs.append(0 if p.null else (a.ctypes.data_as(ctypes.c_void_p).value or 0))
            elif p.role == "output":
                a = poisoned(p, shapes[p.name])
                bufs[p.name] = a
                ptrs.append(a.ctypes.data_as(ctypes.c_void_p).value or 0)
            else:
                v = args[p.name]
                ct = CTYPES[p.dtype]
                if p.dtype in ("float16", "bfloat16"):
                    v = int(np.asarray(v, dtype=p.np_dtype).view(np.uint16))
                obj = ct(v)
                keep.append(obj)
                ptrs.append(ctypes.addressof(obj))
        for name, a in bufs.items():
            if a.size == 0:
                # Give empty buffers a valid, distinct address.
                keep.append(ctypes.create_string_buffer(16))
        argv = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
        lv = (ctypes.c_longlong * 7)(*[int(x) for x in launch])
        err = ctypes.create_string_buffer(1024)
        rc = self.fn(argv, lv, err, len(err))
        if rc != 0:
            msg = err.value.decode("utf-8", "replace") or f"pallasify_launch returned {rc}"
            return {"ok": False, "error": msg}
        return self._finish(args, bufs)

    def _finish(self, args, bufs):
        outs, mutated, unwritten = {}, [], {}
        for p in self.spec.params:
            if p.role in ("output", "inout"):
                outs[p.name] = bufs[p.name]
                if p.role == "output":
                    n = count_poison(p, bufs[p.name])
                    if n:
                        unwritten[p.name] = n
            elif p.role == "input":
                before = np.asarray(args[p.name])
                if before.tobytes() != bufs[p.name].tobytes():
                    mutated.append(p.name)
        return {"ok": True, "outputs": outs, "mutated": mutated, "unwritten": unwritten}


class PyReference:
    def __init__(self, spec, path):
        self.spec = spec
        modspec = importlib.util.spec_from_file_location("pallasify_reference", path)
        if modspec is None or modspec.loader is None:
            raise ImportError(f"cannot load {path}")
        mod = importlib.util.module_from_spec(modspec)
        modspec.loader.exec_module(mod)
        self.fn = getattr(mod, "reference")
        self.kernel_name = ""

    def run(self, args, shapes, launch):
        spec = self.spec
        call, bufs = {}, {}
        for p in spec.params:
            if p.role in ("input", "inout"):
                a = np.array(args[p.name], dtype=p.np_dtype, copy=True)
                bufs[p.name] = a
                call[p.name] = a
            elif p.role in ("scalar", "size"):
                call[p.name] = args[p.name]
        res = self.fn(call)
        if not isinstance(res, dict):
            return {"ok": False, "error": f"reference() returned {type(res).__name__}, want dict"}
        outs = {}
        for p in spec.outputs:
            if p.name not in res:
                return {"ok": False, "error": f"reference() did not return {p.name!r}"}
            v = np.asarray(res[p.name])
            if tuple(v.shape) != tuple(shapes[p.name]):
                return {"ok": False, "error": f"reference() returned {p.name} with shape {v.shape}, spec says {tuple(shapes[p.name])}"}
            outs[p.name] = np.ascontiguousarray(v.astype(p.np_dtype))
        mutated = [p.name for p in spec.params if p.role == "input" and np.asarray(args[p.name]).tobytes() != bufs[p.name].tobytes()]
        return {"ok": True, "outputs": outs, "mutated": mutated, "unwritten": {}}


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="pallasify_harness.refworker")
    ap.add_argument("--spec", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--so")
    g.add_argument("--py")
    a = ap.parse_args(argv)
    import os

    # Anything the reference prints (Python or C printf) must not corrupt the
    # channel: keep the real stdout for messages, point fd 1 at stderr.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    try:
        spec = load_spec(a.spec)
        ref = SoReference(spec, a.so) if a.so else PyReference(spec, a.py)
        send(out, {"ok": True, "ready": True, "kernel_name": ref.kernel_name})
    except (SpecError, OSError, ImportError, AttributeError, SyntaxError, Exception) as e:  # noqa: BLE001
        send(out, {"ok": False, "error": f"cannot load reference: {type(e).__name__}: {e}"})
        return 1
    while True:
        req = recv(inp)
        if req is None:
            return 0
        try:
            res = ref.run(req["args"], req["shapes"], req["launch"])
        except Exception as e:  # noqa: BLE001 - report, the harness decides
            res = {"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc(limit=5)}
        send(out, res)


if __name__ == "__main__":
    sys.exit(main())
