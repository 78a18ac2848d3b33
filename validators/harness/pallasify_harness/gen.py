"""Input generation: distributions, scalars, subnormal exclusion."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .spec import Param, Spec

DISTRIBUTIONS = ["normal", "uniform", "large", "negative", "ties"]
SPECIAL = "special"  # NaN, ±Inf and -0.0 sprinkled into normal data


def _floats(rng, dist: str, shape) -> np.ndarray:
    if dist == "normal":
        return rng.standard_normal(shape)
    if dist == "uniform":
        return rng.uniform(-1.0, 1.0, shape)
    if dist == "large":
        # Large magnitudes: overflow in naive exp/softmax, cancellation.
        return rng.standard_normal(shape) * 1000.0
    if dist == "negative":
        return -rng.uniform(0.05, 4.0, shape)
    if dist == "ties":
        return rng.integers(-3, 4, shape).astype(np.float64)
    if dist == SPECIAL:
        x = rng.standard_normal(shape)
        flat = x.reshape(-1)
        if flat.size:
            k = max(1, flat.size // 50)
            for v in (np.nan, np.inf, -np.inf, -0.0):
                flat[rng.integers(0, flat.size, k)] = v
        return x
    raise ValueError(f"unknown distribution {dist!r}")


def make_array(p: Param, shape, dist: str, rng) -> tuple[np.ndarray, int]:
    """Return (array, number of subnormal values flushed to zero)."""
    dt = p.np_dtype
    if p.is_float:
        x = _floats(rng, dist, shape)
        if p.int_range:
            lo, hi = p.int_range
            x = rng.integers(lo, hi, shape).astype(np.float64)
        arr = x.astype(dt)
        # Exclude subnormal inputs (XLA flushes them; CUDA without fast-math
        # keeps them): replace with signed zero, and count.
        tiny = float(ml_dtypes.finfo(dt).tiny)  # numpy's finfo has no bfloat16
        a64 = arr.astype(np.float64)
        sub = (a64 != 0) & (np.abs(a64) < tiny)
        n = int(sub.sum())
        if n:
            a64[sub] = 0.0
            arr = a64.astype(dt)
        return np.ascontiguousarray(arr), n
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_), 0
    info = np.iinfo(dt)
    if p.int_range:
        lo, hi = int(p.int_range[0]), int(p.int_range[1])
    elif dist == "ties":
        lo, hi = 0, 4
    elif dist == "negative" and info.min < 0:
        lo, hi = -100, 0
    else:
        lo, hi = max(info.min, -100), min(info.max, 100)
    if hi <= lo:
        hi = lo + 1
    return np.ascontiguousarray(rng.integers(lo, hi, shape).astype(dt)), 0


def scalar_value(p: Param, env: dict, rng):
    if p.role == "size":
        return int(p._expr_fn(env))
    if p.value is not None:
        v = p.value
    elif p.range:
        lo, hi = float(p.range[0]), float(p.range[1])
        if p.is_float:
            v = float(rng.uniform(lo, hi))
        else:
            v = int(rng.integers(int(lo), int(hi) + 1))
    elif p.is_float:
        v = float(rng.uniform(0.5, 2.0))
    else:
        v = int(rng.integers(1, 9))
    if p.is_float:
        # Round to the parameter's precision so both sides see the same value.
        return float(np.asarray(v, dtype=p.np_dtype).astype(np.float64))
    return int(v)


def make_case(spec: Spec, env: dict, seed: int, dist: str):
    """Generate one case: {name: ndarray|number}, subnormals flushed."""
    rng = np.random.default_rng([seed, 0x9A11A5])
    args, flushed = {}, 0
    for i, p in enumerate(spec.params):
        prng = np.random.default_rng([seed, i, 0x9A11A5])
        if p.role in ("input", "inout"):
            args[p.name], n = make_array(p, p.shape_for(env), dist, prng)
            flushed += n
        elif p.role in ("scalar", "size"):
            args[p.name] = scalar_value(p, env, prng)
    del rng
    return args, flushed
