"""Captured launches: the original kernel's real inputs and outputs.

While the repository's own tests ran against the CPU-built extension, the
emulator recorded each launch of the kernel: the scalar arguments, the launch
configuration and every pointer argument's buffer before and after. The
pipeline turns those into a captured-cases file (schema
pallasify.captured/v1) next to the spec:

    {"schema": "pallasify.captured/v1", "kernel": "<id>", "cases": [
      {"label": "launch 3 (roi_align_forward_cuda_kernel<float>)",
       "sizes": {"n": 20480},
       "launch": [gx, gy, gz, bx, by, bz, shared_bytes],
       "args": {"input": {"dtype": "float32", "shape": [2, 16], "data": "<base64>"}, "n": 20480},
       "expected": {"out": {"dtype": "float32", "shape": [2, 16], "data": "<base64>"}}}]}

`args` holds the before-buffers of input and inout parameters and the
scalars; `expected` the after-buffers of output and inout parameters (raw
little-endian bytes). Each case is checked before the generated sweep:

1. the candidate runs on the captured inputs and must reproduce the captured
   outputs (within the dtype's tolerance) and leave its inputs unchanged;
2. the emulator reference runs on the same inputs and must reproduce them
   too, so the isolated kernel (the reference every fresh case is compared
   against) is shown to be the kernel the repository really launches.

A wrong candidate is rejected with the captured launch named in the reason.
"""

from __future__ import annotations

import base64
import json

import numpy as np

from .compare import compare, tolerance
from .spec import DTYPES, SpecError

CAPTURED_SCHEMA = "pallasify.captured/v1"


class CapturedError(ValueError):
    """The captured-cases file is malformed or does not fit the spec."""


def _array(name, entry):
    try:
        dt = DTYPES[entry["dtype"]]
        shape = tuple(int(s) for s in entry["shape"])
        raw = base64.b64decode(entry["data"], validate=True)
    except (KeyError, TypeError, ValueError) as e:
        raise CapturedError(f"buffer {name}: {e}") from None
    n = int(np.prod(shape, dtype=np.int64))
    if len(raw) != n * dt.itemsize:
        raise CapturedError(f"buffer {name}: {len(raw)} bytes, shape {list(shape)} of {entry['dtype']} needs {n * dt.itemsize}")
    return np.frombuffer(raw, dtype=dt).reshape(shape).copy()


def load_cases(path, spec):
    """Parse the captured-cases file and check it against the spec."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise CapturedError(f"cannot read captured cases {path}: {e}") from None
    if raw.get("schema") != CAPTURED_SCHEMA:
        raise CapturedError(f"captured cases schema {raw.get('schema')!r}, want {CAPTURED_SCHEMA}")
    cases = []
    for i, rc in enumerate(raw.get("cases") or []):
        label = rc.get("label") or f"captured case {i}"
        launch = [int(x) for x in rc.get("launch") or []]
        if len(launch) != 7:
            raise CapturedError(f"{label}: launch needs 7 values (grid, block, shared bytes)")
        args, expected = {}, {}
        for p in spec.params:
            if p.role in ("input", "inout"):
                if p.name not in (rc.get("args") or {}):
                    raise CapturedError(f"{label}: no captured buffer for input {p.name}")
                args[p.name] = _array(p.name, rc["args"][p.name])
                if args[p.name].dtype != p.np_dtype:
                    raise CapturedError(f"{label}: {p.name} captured as {args[p.name].dtype}, spec says {p.dtype}")
            elif p.role in ("scalar", "size"):
                if p.name not in (rc.get("args") or {}):
                    raise CapturedError(f"{label}: no captured value for scalar {p.name}")
                args[p.name] = rc["args"][p.name]
            if p.role in ("output", "inout"):
                if p.name not in (rc.get("expected") or {}):
                    raise CapturedError(f"{label}: no captured output for {p.name}")
                expected[p.name] = _array(p.name, rc["expected"][p.name])
        sizes = {k: int(v) for k, v in (rc.get("sizes") or {}).items()}
        cases.append({"label": label, "sizes": sizes, "launch": launch, "args": args, "expected": expected})
    return cases


def _scalar(p, x):
    if p.is_float:
        return float(x)
    if p.dtype == "bool":
        return bool(x)
    return int(x)


def run_cases(path, spec, run, ref, v, tracer, interp_val):
    """Check the candidate (and the reference) on every captured launch.

    Raises the protocol's Stop on the first failure; records each compared
    output in the verdict's cases with distribution "captured".
    """
    import jax

    from . import protocol as pr

    try:
        cases = load_cases(path, spec)
    except (CapturedError, SpecError) as e:
        raise pr.error("V-SPEC", f"captured cases: {e}") from None
    v.d["captured_cases"] = len(cases)
    gates = v.d["gates"]
    out_params = spec.outputs
    for c in cases:
        label = c["label"]
        v.phase = f"captured {label}"
        scalars = {p.name: _scalar(p, c["args"][p.name]) for p in spec.params if p.role in ("scalar", "size")}
        arrays = {p.name: c["args"][p.name] for p in spec.params if p.role in ("input", "inout")}
        shapes = {p.name: tuple(c["expected"][p.name].shape) for p in out_params}
        pristine = {k: np.array(x, copy=True) for k, x in arrays.items()}

        def f(arrs, scalars=scalars):
            tracer.interpret = interp_val
            return run({**arrs, **scalars}, interpret=interp_val)

        out, jin = pr._call(jax.jit(f), arrays, None, _interp(), f"on {label}")
        pr._check_inputs(jin, pristine, gates)
        pr._check_outputs_shape(out, out_params, shapes)

        # The reference on the same inputs: the isolated kernel must be the
        # kernel the repository launched.
        res = ref.run({k: (np.array(x, copy=True) if isinstance(x, np.ndarray) else x) for k, x in c["args"].items()},
                      shapes, c["launch"])
        if not res.get("ok"):
            raise pr.error("V-REFERENCE", f"reference failed on {label}: {res.get('error')}")
        for p in out_params:
            tol = tolerance(p.dtype, spec.tolerance, spec.red_len(c["sizes"]))
            want = c["expected"][p.name]
            rr = compare(want, res["outputs"][p.name], p.dtype, tol)
            if rr["mismatches"] or not rr["nan_mask_ok"]:
                raise pr.error("V-REFERENCE", f"{p.name}: the isolated reference does not reproduce {label} "
                               f"({rr['mismatches']} of {want.size} elements differ, first at {rr['first_mismatches'][:1]})")
            r = compare(want, out[p.name], p.dtype, tol)
            entry = {"sizes": c["sizes"], "sizes_key": "captured:" + label, "seed": 0, "distribution": "captured",
                     "output": p.name, "dtype": p.dtype, "shape": list(np.shape(want)), "label": label, "degenerate": None}
            entry.update(r)
            v.d["cases"].append(entry)
            if r["mismatches"]:
                raise pr.reject("V-MISMATCH", f"{p.name}: {r['mismatches']} of {want.size} elements differ from the "
                                f"original's output on {label}; max abs {r['max_abs']:.3g}, first at "
                                f"{r['first_mismatches'][:1]} (expected {r.get('first_expected')}, got {r.get('first_actual')})")
            if not r["nan_mask_ok"]:
                raise pr.reject("V-NAN", f"{p.name}: NaN/Inf pattern differs from the original's output on {label}, "
                                f"first at {r['first_mismatches'][:1]}")
    return len(cases)


def _interp():
    from . import interp

    return interp
