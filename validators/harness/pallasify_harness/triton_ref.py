"""Triton reference: the original @triton.jit kernel, run through its own
Python wrapper by Triton's interpreter (TRITON_INTERPRET=1) on CPU tensors.

A generated reference.py (validators/triton.go) holds a call description and
the repository's Python sources it needs:

    {"module": "pkg.ops", "entry": "softmax_forward", "mode": "call",
     "args": ["x", "eps"], "returns": ["y", "rstd"],
     "files": {"pkg/__init__.py": "...", "pkg/ops.py": "..."}}

`mode` "call" calls module.entry(*args) and names the returned tensors (a
tensor or a tuple, flattened in order; None entries are skipped by an empty
name). `mode` "backward" calls module.entry(*args) with the tensors named in
"grad_of" requiring grad, back-propagates the tensors named in
"grad_outputs" and returns the gradients under the names in "returns" (the
autograd.Function's backward, run by torch's autograd as the model would).

`mode` "kernel" launches the kernel itself from a spec (no wrapper):

    {"mode": "kernel", "module": "triton_unit_k", "entry": "k", "args": [...],
     "grid": ["rows"], "constexprs": {"BLOCK_SIZE": "next_power_of_2(cols)"},
     "symbols": {"rows": {"param": "X", "axis": 0}, ...},
     "alloc": {"Y": {"shape": ["rows", "cols"], "dtype": "float32"}},
     "returns": ["Y"]}

grid and constexpr values are Python expressions of the size symbols (with
next_power_of_2, cdiv, min, max); outputs are allocated filled with NaN.

Every launch (kernel name, grid, constexpr values, argument shapes, dtypes
and strides) is recorded; `python -m pallasify_harness.triton_ref --probe`
runs one case of a spec and prints the launches (the recorded spec).
"""

from __future__ import annotations

import json
import os
import sys

# Before torch or triton is imported: the interpreter, and no accelerator
# back-end auto-loaded by torch (torch_tpu would take libtpu's lock).
os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

import numpy as np  # noqa: E402

BUNDLE_DIR = "triton_src"


class TritonRefError(RuntimeError):
    """The Triton reference could not run (import, wrapper or interpreter)."""


def write_bundle(files: dict, root: str) -> str:
    """Write the bundled sources under root/triton_src and put it first on sys.path."""
    base = os.path.abspath(os.path.join(root, BUNDLE_DIR))
    for rel, text in sorted(files.items()):
        rel = os.path.normpath(rel)
        if rel.startswith("..") or os.path.isabs(rel):
            raise TritonRefError(f"bundled path {rel!r} leaves the bundle")
        dst = os.path.join(base, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w", encoding="utf-8") as f:
            f.write(text)
    if base not in sys.path:
        sys.path.insert(0, base)
    return base


def to_torch(a):
    import torch

    if isinstance(a, np.ndarray):
        if a.dtype.name == "bfloat16":
            return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(a))
    return a


def to_numpy(t):
    import torch

    t = t.detach()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return t.contiguous().numpy().copy()


def describe(v):
    """A launch argument as JSON: tensors by shape, dtype and strides."""
    try:
        import torch

        if isinstance(v, torch.Tensor):
            return {"tensor": True, "shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch."),
                    "strides": list(v.stride())}
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return repr(v)[:80]


class LaunchRecorder:
    """Wraps the interpreter's GridExecutor so every launch is recorded."""

    def __init__(self):
        self.launches = []
        self._orig = None

    def install(self):
        import inspect

        from triton.runtime import interpreter

        if self._orig is not None:
            return
        orig = interpreter.GridExecutor.__call__
        rec = self

        def call(ex, *args, **kwargs):
            spec = inspect.getfullargspec(ex.fn)
            kw = {k: v for k, v in kwargs.items() if k in spec.args or k in spec.kwonlyargs}
            entry = {"kernel": getattr(ex.fn, "__name__", "?"), "grid": None, "args": {}, "constexprs": {}}
            try:
                bound = inspect.getcallargs(ex.fn, *args, **kw)
            except TypeError:
                bound = {}
            for name, val in bound.items():
                if name in ex.constexprs:
                    entry["constexprs"][name] = describe(val)
                else:
                    entry["args"][name] = describe(val)
            grid = ex.grid

            def resolved(meta):
                g = grid(meta) if callable(grid) else grid
                entry["grid"] = [int(x) for x in tuple(g)]
                return g

            ex.grid = resolved
            rec.launches.append(entry)
            try:
                return orig(ex, *args, **kwargs)
            finally:
                ex.grid = grid

        interpreter.GridExecutor.__call__ = call
        self._orig = orig


# libdevice functions are stubs under the interpreter (triton 3.9 patches
# tl and tl.math only): each one used by a kernel is run by torch's CPU op of
# the same name on the element data, in the element dtype.
LIBDEVICE_UNARY = ["tanh", "erf", "erfc", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                   "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "floor",
                   "ceil", "trunc", "round", "fabs", "abs", "sigmoid", "lgamma", "digamma", "isnan", "isinf", "signbit"]
LIBDEVICE_BINARY = {"pow": "pow", "atan2": "atan2", "fmod": "fmod", "fmax": "fmax", "fmin": "fmin",
                    "copysign": "copysign", "hypot": "hypot", "nextafter": "nextafter"}
LIBDEVICE_ALIAS = {"fast_expf": "exp", "fast_logf": "log", "fast_tanhf": "tanh", "rsqrtf": "rsqrt", "fabs": "abs",
                   "isnan": "isnan", "isinf": "isinf", "round": "round"}


def _as_handle(x, like):
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if isinstance(x, tl.tensor):
        return x
    data = np.full(like.handle.data.shape, x, dtype=like.handle.data.dtype)
    return tl.tensor(TensorHandle(data, like.handle.dtype.scalar), like.type)


def _libdevice_fn(name, torch_name, arity, used):
    def fn(*xs, **_):
        import torch
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        used.add(name)
        like = next(x for x in xs if isinstance(x, tl.tensor))
        hs = [_as_handle(x, like) for x in xs[:arity]]
        ts = [torch.from_numpy(np.ascontiguousarray(h.handle.data)) for h in hs]
        out = getattr(torch, torch_name)(*ts).numpy()
        if out.dtype == np.bool_:
            return tl.tensor(TensorHandle(out, tl.int1), tl.block_type(tl.int1, like.type.shape)
                             if like.type.is_block() else tl.int1)
        return tl.tensor(TensorHandle(out.astype(hs[0].handle.data.dtype), hs[0].handle.dtype.scalar), hs[0].type)
    fn.__name__ = name
    return fn


def install_libdevice(used: set) -> list:
    """Replace the libdevice stubs the interpreter leaves unpatched."""
    import importlib

    done = []
    for modname in ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice"):
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        table = {n: (n, 1) for n in LIBDEVICE_UNARY}
        table.update({n: (t, 2) for n, t in LIBDEVICE_BINARY.items()})
        table.update({n: (t, 1) for n, t in LIBDEVICE_ALIAS.items()})
        for name, (tname, arity) in table.items():
            if hasattr(mod, name):
                import torch

                if hasattr(torch, tname):
                    setattr(mod, name, _libdevice_fn(name, tname, arity, used))
        done.append(modname)
    return done


def install_float_args():
    """Compiled Triton specialises a Python float argument to an fp32 scalar
    (so eps.to(tl.float32) works); triton 3.9's interpreter passes it on as a
    Python float. Convert it the way the compiler types it."""
    from triton.runtime import interpreter

    if getattr(interpreter._implicit_cvt, "_pallasify", False):
        return
    orig = interpreter._implicit_cvt

    def cvt(arg):
        if isinstance(arg, float):
            import triton.language as tl

            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return orig(arg)

    cvt._pallasify = True
    interpreter._implicit_cvt = cvt


def install_dtype_call():
    """tl.float32(0.0) builds a scalar in compiled Triton; triton 3.9's
    interpreter has no dtype call. Give it one (a scalar of that dtype)."""
    import triton.language as tl
    from triton.runtime import interpreter

    if "__call__" in vars(tl.core.dtype):
        return

    def call(self, value):
        data = np.array([value], dtype=interpreter._get_np_dtype(self))
        return tl.tensor(interpreter.TensorHandle(data, self), self)

    tl.core.dtype.__call__ = call


def _resolve(mod, dotted: str):
    obj = mod
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


class TritonReference:
    """reference(args) -> outputs, for refworker's plain-Python reference."""

    def __init__(self, desc: dict, root: str | None = None):
        import importlib

        self.desc = desc
        if desc.get("files"):
            write_bundle(desc["files"], root or os.getcwd())
        self.recorder = LaunchRecorder()
        try:
            import torch  # noqa: F401
            import triton  # noqa: F401

            self.recorder.install()
            self.libdevice_used = set()
            install_libdevice(self.libdevice_used)
            install_float_args()
            install_dtype_call()
            self.module = importlib.import_module(desc["module"])
            self.fn = _resolve(self.module, desc["entry"])
        except Exception as e:  # noqa: BLE001 - the reason is the verdict's
            raise TritonRefError(f"cannot load {desc.get('module')}.{desc.get('entry')}: {type(e).__name__}: {e}") from e

    def _kernel_call(self, args: dict) -> dict:
        import torch
        import triton

        d = self.desc
        env = {"next_power_of_2": triton.next_power_of_2, "cdiv": triton.cdiv, "min": min, "max": max}
        for sym, ref in (d.get("symbols") or {}).items():
            env[sym] = int(np.shape(args[ref["param"]])[int(ref["axis"])]) // int(ref.get("div") or 1)

        def ev(expr):
            return eval(compile(str(expr), "<spec>", "eval"), {"__builtins__": {}}, dict(env))  # noqa: S307 - ours

        tensors = {}
        for name in d["args"]:
            if name in (d.get("alloc") or {}):
                b = d["alloc"][name]
                shape = tuple(int(ev(e)) for e in b["shape"])
                dt = getattr(torch, b.get("dtype", "float32"))
                tensors[name] = torch.full(shape, float("nan"), dtype=dt)
            else:
                v = args[name]
                tensors[name] = to_torch(np.array(v, copy=True)) if isinstance(v, np.ndarray) else v
        grid = tuple(int(ev(g)) for g in d["grid"])
        const = {k: ev(v) for k, v in (d.get("constexprs") or {}).items()}
        # by name: a constexpr may sit between the runtime parameters
        self.fn[grid](**{n: tensors[n] for n in d["args"]}, **const)
        return {n: to_numpy(tensors[n]) for n in d["returns"]}

    def __call__(self, args: dict) -> dict:
        import torch

        d = self.desc
        if d.get("mode") == "kernel":
            return self._kernel_call(args)
        call = [to_torch(args[n]) for n in d["args"]]
        if d.get("mode", "call") == "backward":
            need = set(d.get("grad_of") or [])
            leaves = {}
            for i, n in enumerate(d["args"]):
                if n in need:
                    call[i] = call[i].clone().requires_grad_(True)
                    leaves[n] = call[i]
            out = self.fn(*call)
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            grads = [to_torch(args[n]) for n in d.get("grad_outputs") or []]
            pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, torch.Tensor)]
            torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
            res = {}
            for name, src in zip(d["returns"], d["grad_of"]):
                g = leaves[src].grad
                if g is None:
                    raise TritonRefError(f"no gradient reached {src!r}")
                res[name] = to_numpy(g)
            return res
        with torch.no_grad():
            out = self.fn(*call)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        res = {}
        for name, t in zip(d["returns"], outs):
            if name and t is not None:
                res[name] = to_numpy(t)
        missing = [n for n in d["returns"] if n and n not in res]
        if missing:
            raise TritonRefError(f"{d['entry']} returned {len(outs)} value(s); no {missing}")
        return res


def _probe(a):
    """Run one case of the spec through the reference and print its launches."""
    from .gen import make_case
    from .spec import load_spec, shape_sweep

    with open(a.desc, encoding="utf-8") as f:
        desc = json.load(f)
    spec = load_spec(a.spec)
    res = {"kernel": spec.id, "ok": False, "launches": [], "error": ""}
    try:
        ref = TritonReference(desc, root=a.root or os.getcwd())
        env = shape_sweep(spec, 2)[-1]
        args, _ = make_case(spec, env, 1, "normal")
        out = ref(args)
        res.update(ok=True, sizes=env, launches=ref.recorder.launches, libdevice_shim=sorted(ref.libdevice_used),
                   outputs={k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in out.items()})
    except Exception as e:  # noqa: BLE001 - the probe reports, never raises
        res["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"
    text = json.dumps(res, indent=1, default=str)
    if a.out in (None, "-"):
        sys.stdout.write(text + "\n")
    else:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0 if res["ok"] else 1


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="pallasify_harness.triton_ref", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probe", action="store_true", required=True, help="run one case and print the launches")
    ap.add_argument("--desc", required=True, help="call description JSON")
    ap.add_argument("--spec", required=True, help="KernelSpec JSON")
    ap.add_argument("--root", default="", help="where the bundle is written (default: cwd)")
    ap.add_argument("--out", default="-")
    a = ap.parse_args(argv)
    return _probe(a)


if __name__ == "__main__":
    sys.exit(main())
