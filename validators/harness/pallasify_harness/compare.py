"""Float64 comparison with dtype-aware tolerances, ULP statistics and the
non-degeneracy gate."""

from __future__ import annotations

import math

import numpy as np

# torch.testing.assert_close defaults (torch/testing/_comparison.py).
DEFAULT_TOL = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}
FIRST_MISMATCHES = 5


def tolerance(dtype: str, override=None, red_len=None):
    """(rtol, atol, floor). |act - exp| <= atol + rtol * max(|exp|, floor·mean|exp|).

    The floor makes the relative term magnitude-aware: where a result
    cancels (a*x + y with |a*x| ≈ |y|), |exp| is no scale for the rounding
    error, which follows the size of the terms (legitimately different with
    FMA contraction or another summation order). For reductions rtol also
    grows with sqrt(reduction length)."""
    if override:
        return float(override.get("rtol", 0.0)), float(override.get("atol", 0.0)), False
    if dtype not in DEFAULT_TOL:
        return 0.0, 0.0, False  # integers and bool: exact
    rtol, atol = DEFAULT_TOL[dtype]
    if red_len and red_len > 1:
        rtol *= math.sqrt(red_len)
    return rtol, atol, True


def to_f64(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return a.astype(np.float64)
    return a.astype(np.float64)  # ml_dtypes bf16 has kind 'V': astype works


def _ordered_bits(a: np.ndarray, dtype: str):
    """Map floats to integers whose difference is the ULP distance."""
    itype = {"float32": (np.float32, np.int32), "float64": (np.float64, np.int64),
             "float16": (np.float16, np.int16), "bfloat16": (None, np.int16)}[dtype]
    if dtype == "bfloat16":
        import ml_dtypes

        bits = np.asarray(a, dtype=np.float64).astype(ml_dtypes.bfloat16).view(np.int16).astype(np.int64)
    else:
        bits = np.asarray(a, dtype=np.float64).astype(itype[0]).view(itype[1]).astype(np.int64)
    width = np.iinfo(itype[1]).bits
    neg = bits < 0
    bits[neg] = -(bits[neg] & ((1 << (width - 1)) - 1))
    return bits


def ulp_diff(exp, act, dtype: str) -> np.ndarray:
    if dtype in DEFAULT_TOL:
        return np.abs(_ordered_bits(act, dtype) - _ordered_bits(exp, dtype)).astype(np.float64)
    return np.abs(np.asarray(act, np.float64) - np.asarray(exp, np.float64))


def compare(exp_raw, act_raw, dtype: str, tol, flush_subnormals=True) -> dict:
    """Compare one output. Returns a dict of stats and failure flags."""
    rtol, atol, floor = tol
    exp = to_f64(exp_raw).copy()
    act = to_f64(act_raw).copy()
    res = {"max_abs": 0.0, "max_rel": 0.0, "ulp_p50": 0.0, "ulp_p99": 0.0, "ulp_max": 0.0,
           "mismatches": 0, "first_mismatches": [], "nan_mask_ok": True, "nan_mismatches": 0,
           "signed_zero_mismatches": 0, "flushed": 0, "rtol": rtol, "atol": atol, "tol_ratio": 0.0}
    isf = dtype in DEFAULT_TOL
    if isf and flush_subnormals:
        import ml_dtypes

        tiny = float(ml_dtypes.finfo(dtype if dtype != "bfloat16" else ml_dtypes.bfloat16).tiny)
        for arr in (exp, act):
            sub = (arr != 0) & (np.abs(arr) < tiny)
            res["flushed"] += int(sub.sum())
            arr[sub] = 0.0
    # Where the reference is NaN/±Inf the candidate must match it (mask and
    # sign): a V-NAN failure. Where the reference is finite, a non-finite
    # candidate value is an ordinary mismatch.
    en, an = np.isnan(exp), np.isnan(act)
    ei, ai = np.isinf(exp), np.isinf(act)
    special_bad = (en & ~an) | (ei & ~(ai & (np.sign(exp) == np.sign(act))))
    res["nan_mismatches"] = int(special_bad.sum())
    res["nan_mask_ok"] = res["nan_mismatches"] == 0
    efin = np.isfinite(exp)
    fin = efin & np.isfinite(act)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(fin, np.abs(act - exp), 0.0)
    scale = np.abs(exp)
    if floor and fin.any():
        scale = np.maximum(scale, float(np.mean(np.abs(exp[fin]))))
    nonfin = efin & ~np.isfinite(act)
    res["nonfinite"] = int(nonfin.sum())
    bound = atol + rtol * scale
    bad = nonfin | (fin & (diff > bound))
    bad_all = bad | special_bad
    res["mismatches"] = int(bad.sum())
    if bad_all.any():
        idx = np.argwhere(bad_all)[:FIRST_MISMATCHES]
        res["first_mismatches"] = [[int(i) for i in row] for row in idx]
        first = tuple(idx[0])
        res["first_expected"] = _num(exp[first])
        res["first_actual"] = _num(act[first])
    if fin.any():
        d = diff[fin]
        e = np.abs(exp[fin])
        res["max_abs"] = float(d.max())
        nz = e > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(nz, d / np.where(nz, e, 1.0), np.where(d > 0, np.inf, 0.0))
        res["max_rel"] = float(rel.max())
        u = ulp_diff(exp[fin], act[fin], dtype)
        res["ulp_p50"] = float(np.percentile(u, 50))
        res["ulp_p99"] = float(np.percentile(u, 99))
        res["ulp_max"] = float(u.max())
        # the largest error as a share of its element's tolerance: above 1
        # is a mismatch (with a zero tolerance any error is infinitely far)
        b = np.broadcast_to(bound, fin.shape)[fin]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(b > 0, d / np.where(b > 0, b, 1.0), np.where(d > 0, np.inf, 0.0))
        res["tol_ratio"] = float(ratio.max())
    if res["nonfinite"]:
        res["tol_ratio"] = math.inf
    zeros = fin & (exp == 0) & (act == 0)
    res["signed_zero_mismatches"] = int((zeros & (np.signbit(exp) != np.signbit(act))).sum())
    return res


def _num(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def passes(exp_raw, act, dtype, tol) -> bool:
    r = compare(exp_raw, act, dtype, tol)
    return r["mismatches"] == 0 and r["nan_mask_ok"]


def degenerate(exp_raw, dtype: str, tol) -> str | None:
    """Why this test cannot tell a constant output from the reference, or None.

    Refused when the finite reference values stay within ±0.01, their std is
    ≤ 0.01, or an all-zero or constant (mean) output would pass the
    comparison (the tolerance is too loose for the output's magnitude)."""
    exp = to_f64(exp_raw)
    fin = exp[np.isfinite(exp)]
    if fin.size == 0:
        return "no finite reference values"
    if float(np.max(np.abs(fin))) <= 0.01:
        return "reference output within ±0.01"
    if fin.size < 2:
        # No spread within one element: the harness checks variation across
        # cases instead.
        return "an all-zero output would pass" if passes(exp_raw, np.zeros(np.shape(exp)), dtype, tol) else None
    if float(np.std(fin)) <= 0.01:
        return "reference output std ≤ 0.01 (near-constant)"
    shape = np.shape(exp)
    if passes(exp_raw, np.zeros(shape), dtype, tol):
        return "an all-zero output would pass"
    if passes(exp_raw, np.full(shape, float(np.mean(fin))), dtype, tol):
        return "a constant output would pass"
    return None
