"""KernelSpec loading, dtype mapping and the shape sweep."""

from __future__ import annotations

import ctypes
import json
import random
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from .expr import ExprError, compile_expr

SPEC_SCHEMA = "pallasify.kernelspec/v1"

DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float64": np.dtype(np.float64),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint32": np.dtype(np.uint32),
    "uint8": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "uint16": np.dtype(np.uint16),
    "uint64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
}
# Dtypes JAX holds only with jax_enable_x64 (off in the harness: a TPU Pallas
# kernel has no 64-bit integers); a spec with a uint64 buffer is refused
# (V-WIDE-INT) rather than compared through a silent truncation to uint32.
X64_DTYPES = {"uint64"}
FLOAT_DTYPES = {"float32", "float16", "bfloat16", "float64"}

# C value types for scalar parameters (the ABI passes their addresses).
CTYPES = {
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint32": ctypes.c_uint32,
    "uint8": ctypes.c_uint8,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "uint16": ctypes.c_uint16,
    "uint64": ctypes.c_uint64,
    "bool": ctypes.c_bool,
    "float16": ctypes.c_uint16,  # raw bits
    "bfloat16": ctypes.c_uint16,  # raw bits
}

ROLES = {"input", "output", "inout", "scalar", "size"}


class SpecError(ValueError):
    """The spec is malformed or inconsistent."""


@dataclass
class Param:
    name: str
    kind: str
    ctype: str
    dtype: str
    role: str
    shape: list = field(default_factory=list)
    expr: str | None = None
    range: list | None = None
    value: float | None = None
    int_range: list | None = None
    # NULL in every captured launch (an empty tensor's data_ptr()): an empty
    # input for the candidate, a NULL pointer for the reference.
    null: bool = False
    _shape_fns: list = field(default_factory=list, repr=False)
    _expr_fn: object = None

    @property
    def np_dtype(self):
        return DTYPES[self.dtype]

    @property
    def is_float(self):
        return self.dtype in FLOAT_DTYPES

    def shape_for(self, env) -> tuple:
        return tuple(int(f(env)) for f in self._shape_fns)


@dataclass
class Spec:
    raw: dict
    id: str
    name: str
    cls: str
    symbols: list
    params: list
    grid: list
    block: list
    shared: object
    constraints: list
    sweep: list
    max: dict
    deterministic: bool
    fast_math: bool
    tolerance: dict | None
    reduction_length: object
    note: str

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def outputs(self):
        return [p for p in self.params if p.role in ("output", "inout")]

    def launch_for(self, env) -> list:
        vals = [int(f(env)) for f in self.grid] + [int(f(env)) for f in self.block] + [int(self.shared(env))]
        return vals

    def satisfies(self, env) -> bool:
        try:
            return all(bool(c(env)) for c in self.constraints)
        except ExprError:
            return False

    def red_len(self, env):
        if self.reduction_length is None:
            return None
        return int(self.reduction_length(env))


def _cexpr(text, what):
    try:
        return compile_expr(text)
    except ExprError as e:
        raise SpecError(f"{what}: {e}") from None


def load_spec(path: str) -> Spec:
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise SpecError(f"cannot read spec {path}: {e}") from None
    return parse_spec(raw)


def parse_spec(raw: dict) -> Spec:
    if not isinstance(raw, dict):
        raise SpecError("spec is not a JSON object")
    schema = raw.get("schema", SPEC_SCHEMA)
    if schema != SPEC_SCHEMA:
        raise SpecError(f"unsupported spec schema {schema!r} (want {SPEC_SCHEMA})")
    symbols = list(raw.get("symbols") or [])
    params = []
    for i, rp in enumerate(raw.get("params") or []):
        name = rp.get("name") or f"arg{i}"
        role = rp.get("role", "")
        if role not in ROLES:
            raise SpecError(f"param {name}: unknown role {role!r}")
        dtype = rp.get("dtype", "")
        if dtype not in DTYPES:
            raise SpecError(f"param {name}: unsupported dtype {dtype!r}")
        kind = rp.get("kind") or ("pointer" if role in ("input", "output", "inout") else "scalar")
        p = Param(name=name, kind=kind, ctype=rp.get("ctype", ""), dtype=dtype, role=role,
                  shape=list(rp.get("shape") or []), expr=rp.get("expr"), range=rp.get("range"),
                  value=rp.get("value"), int_range=rp.get("int_range"), null=bool(rp.get("null", False)))
        if p.null and (role != "input" or len(p.shape) != 1 or str(p.shape[0]).strip() != "0"):
            raise SpecError(f"param {name}: a NULL pointer is an input of shape [\"0\"]")
        if role in ("input", "output", "inout"):
            if kind != "pointer":
                raise SpecError(f"param {name}: role {role} needs kind pointer")
            p._shape_fns = [_cexpr(s, f"param {name} shape") for s in p.shape]
        elif role == "size":
            if p.expr is None:
                raise SpecError(f"param {name}: size parameter without expr")
            p._expr_fn = _cexpr(p.expr, f"param {name} expr")
        params.append(p)
    if not params:
        raise SpecError("spec has no params")
    if not any(p.role in ("output", "inout") for p in params):
        raise SpecError("spec has no output or inout param")
    launch = raw.get("launch") or {}
    grid = launch.get("grid") or ["1", "1", "1"]
    block = launch.get("block") or ["1", "1", "1"]
    if len(grid) != 3 or len(block) != 3:
        raise SpecError("launch grid and block need 3 expressions each")
    dom = raw.get("domain") or {}
    sweep = dom.get("sweep") or []
    for a in sweep:
        if set(a) != set(symbols):
            raise SpecError(f"sweep entry {a} does not assign exactly the symbols {symbols}")
    rl = raw.get("reduction_length") or None
    return Spec(
        raw=raw,
        id=raw.get("id") or raw.get("name") or "kernel",
        name=raw.get("name", ""),
        cls=raw.get("class", "other") or "other",
        symbols=symbols,
        params=params,
        grid=[_cexpr(g or "1", "launch grid") for g in grid],
        block=[_cexpr(b or "1", "launch block") for b in block],
        shared=_cexpr(launch.get("shared_bytes") or "0", "launch shared_bytes"),
        constraints=[_cexpr(c, "domain constraint") for c in dom.get("constraints") or []],
        sweep=[dict(a) for a in sweep],
        max={k: int(v) for k, v in (dom.get("max") or {}).items()},
        deterministic=bool(raw.get("deterministic", True)),
        fast_math=bool(raw.get("fast_math", False)),
        tolerance=raw.get("tolerance"),
        reduction_length=_cexpr(rl, "reduction_length") if rl else None,
        note=raw.get("note", ""),
    )


# ---------------------------------------------------------------------------
# Shape sweep

DEFAULT_MAX = 4096
WORK_BUDGET = 1 << 20  # product of the symbol values in a generated sweep
_PRIMES = [2, 3, 5, 7, 13, 31, 61, 127, 257, 509, 1021, 2039]
_AWKWARD = [1000, 1023, 1025, 1030, 129, 130, 9, 17, 33]  # not multiples of 8x128


def _block_consts(spec: Spec):
    out = set()
    for f in spec.block:
        try:
            v = int(f({}))
        except ExprError:
            continue
        if v > 1:
            out.add(v)
    return out


def _candidates(spec: Spec, sym: str) -> list:
    hi = spec.max.get(sym, DEFAULT_MAX)
    vals = {1, *_PRIMES, *_AWKWARD}
    for b in _block_consts(spec) | {8, 16, 32, 64, 128, 256}:
        vals |= {b - 1, b, b + 1, 2 * b + 1, 3 * b, 4 * b, 5 * b}
    return sorted(v for v in vals if 1 <= v <= hi)


def _work(a: dict) -> int:
    w = 1
    for v in a.values():
        w *= max(int(v), 1)
    return w


def shape_sweep(spec: Spec, count: int, seed: int = 0) -> list:
    """Size assignments to test: the spec's sweep, or a generated one.

    A generated sweep draws from 1, primes, block sizes ±1 and values that are
    not multiples of 8×128, keeps assignments that satisfy the constraints,
    and picks `count` of them spread from the smallest to the largest work.
    """
    if spec.sweep:
        good = [a for a in spec.sweep if spec.satisfies(a)]
        if not good:
            raise SpecError("no sweep entry satisfies the domain constraints")
        if count >= len(good):
            return good
        idx = sorted({round(i * (len(good) - 1) / max(count - 1, 1)) for i in range(count)})
        return [good[i] for i in idx]
    if not spec.symbols:
        return [{}]
    cands = {s: _candidates(spec, s) for s in spec.symbols}
    total = 1
    for v in cands.values():
        total *= len(v)
    found = {}
    if total <= 20000:
        import itertools

        for combo in itertools.product(*(cands[s] for s in spec.symbols)):
            a = dict(zip(spec.symbols, combo))
            if _work(a) <= WORK_BUDGET and spec.satisfies(a):
                found[combo] = a
    else:
        rng = random.Random(seed)
        for _ in range(20000):
            combo = tuple(rng.choice(cands[s]) for s in spec.symbols)
            a = dict(zip(spec.symbols, combo))
            if _work(a) <= WORK_BUDGET and spec.satisfies(a):
                found[combo] = a
    if not found:
        raise SpecError("no generated size assignment satisfies the domain constraints; add domain.sweep")
    ordered = sorted(found.values(), key=lambda a: (_work(a), tuple(a.values())))
    # Prefer non-trivial shapes but keep the smallest as an edge case; pick
    # the rest spread over the work range, preferring awkward values.
    picks = [ordered[0]]
    rest = ordered[1:]

    def awkward(a):
        return sum(1 for v in a.values() if v % 128 != 0 and v > 1)

    if rest and count > 1:
        n = count - 1
        buckets = [rest[round(i * len(rest) / n): round((i + 1) * len(rest) / n)] for i in range(n)]
        for b in buckets:
            if b:
                picks.append(max(b[len(b) // 2:], key=lambda a: (awkward(a), _work(a))))
    return picks[:count]
