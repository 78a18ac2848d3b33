"""The TPU compile gate: deviceless ahead-of-time compilation for real TPU chips.

After the numeric proof (TPU interpret mode on the CPU), the candidate is traced
again with interpret=False, so every pl.pallas_call goes through the real Mosaic
lowering, and compiled by libtpu for each configured chip without a TPU attached
(a topology from jax.experimental.topologies), over the shapes of the validated
cases. A candidate that does not lower or compile on a chip is rejected
(V-TPU-COMPILE). Per chip the verdict records the compiler's "bytes accessed"
(cost analysis of the whole compiled program), the minimum traffic (inputs read
once, outputs written once) and the HBM roofline time bytes / bandwidth.

libtpu and concurrency: libtpu takes /tmp/libtpu_lockfile so that one process
owns the TPU chips; with ALLOW_MULTIPLE_LIBTPU_LOAD=1 it skips that lock. A
deviceless compile opens no chip, so tpu_env() sets ALLOW_MULTIPLE_LIBTPU_LOAD=1
(and TPU_SKIP_MDS_QUERY=1, TPU_WORKER_HOSTNAMES=localhost: no GCE metadata
lookups, no worker-address errors) before jax is imported;
harness runs can then compile at the same time, in or out of the sandbox (whose
/tmp is private anyway), and beside any other process that holds the lock.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Chip:
    topology: str  # deviceless topology compiled for
    hbm_bytes_per_s: float  # HBM bandwidth per chip
    devices_per_chip: int  # JAX devices per chip (TensorCores exposed as devices)
    source: str

    @property
    def device_bandwidth(self) -> float:
        """HBM bandwidth of the one JAX device a single-device program runs on."""
        return self.hbm_bytes_per_s / self.devices_per_chip


# The one table of chips (validators/CONTRACTS.md mirrors it). Bandwidths are
# Google Cloud's published per-chip HBM figures. A TPU7x chip has two
# TensorCores that JAX exposes as two devices ("tpu7x:2x2x1" has 8 devices for
# 4 chips), each with half the chip's HBM bandwidth; v5e and v6e have one
# TensorCore per chip.
CHIPS = {
    "v5e": Chip("v5e:2x2", 819e9, 1,
                "https://cloud.google.com/tpu/docs/v5e (HBM2 capacity and bandwidth: 16 GB, 819 GBps)"),
    "v6e": Chip("v6e:2x2", 1638e9, 1,
                "https://cloud.google.com/tpu/docs/tpu7x (HBM bandwidth per chip, v6e (Trillium): 1638 GBps)"),
    "tpu7x": Chip("tpu7x:2x2x1", 7380e9, 2,
                  "https://cloud.google.com/tpu/docs/tpu7x (HBM bandwidth per chip, TPU7x (Ironwood): 7380 GBps; "
                  "two TensorCores per chip)"),
}
DEFAULT_CHIPS = ("v5e", "v6e", "tpu7x")

CPU_LIST = "/sys/devices/system/cpu/possible"
ERROR_LINES = 3
ERROR_CHARS = 600


class Unavailable(Exception):
    """The gate cannot run here (no libtpu, unknown chip, no topology)."""


def tpu_env():
    """What libtpu needs for deviceless compiles; call before importing jax."""
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")


def parse_chips(text: str) -> list[str]:
    """--tpu-chips: a comma-separated list, "none" (or empty) for no gate."""
    text = (text or "").strip()
    if text in ("", "none"):
        return []
    chips = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chips if c not in CHIPS]
    if unknown:
        raise Unavailable(f"unknown TPU chip(s) {unknown}; known: {', '.join(CHIPS)}")
    return list(dict.fromkeys(chips))


def libtpu_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        return version("libtpu")
    except PackageNotFoundError:
        return None


def devices(chips) -> dict:
    """chip name -> device 0 of its deviceless topology."""
    if not chips:
        return {}
    if libtpu_version() is None:
        raise Unavailable("libtpu is not installed in this Python (pip install libtpu, or `make venv`); "
                          "pass --tpu-chips none to skip the TPU compile gate")
    if not os.access(CPU_LIST, os.R_OK):
        # libtpu's tcmalloc aborts the whole process without it.
        raise Unavailable(f"libtpu needs {CPU_LIST} (tcmalloc's CPU count), which is not readable here "
                          "(a sandbox that hides /sys must bind it read-only)")
    from jax.experimental import topologies

    out = {}
    for c in chips:
        try:
            out[c] = topologies.get_topology_desc(CHIPS[c].topology, "tpu").devices[0]
        except Exception as e:  # noqa: BLE001 - libtpu's own failure, reported as such
            raise Unavailable(f"no deviceless {c} topology ({CHIPS[c].topology}): {first_lines(e)}") from None
    return out


def first_lines(e, n=ERROR_LINES, limit=ERROR_CHARS) -> str:
    """The compiler's message, its first non-empty lines, on one line."""
    text = f"{type(e).__name__}: {e}" if isinstance(e, BaseException) else str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    s = " | ".join(lines[:n])
    return s if len(s) <= limit else s[: limit - 1] + "…"


def bytes_accessed(cost) -> float | None:
    """The bytes a compiled program's ops access, from its cost analysis: the
    sum of the per-operand entries ('bytes accessed0{}', 'bytes accessed1{}',
    ..., 'bytes accessedout{}', each summed over every op of the program).
    libtpu's own total, 'bytes accessed', leaves out the Mosaic kernel (the
    tpu_custom_call) whenever XLA ops surround it: for a Pallas copy of a
    (1024, 1024) float32 array followed by a negation it reports 8 MiB, the
    negation alone, where the two ops move 16 MiB (the per-operand sum;
    test_bytes_accessed_counts_the_kernel). That total is the fallback when a
    libtpu gives no per-operand entries."""
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    if not isinstance(cost, dict):
        return None
    parts = [float(v) for k, v in cost.items() if re.fullmatch(r"bytes accessed(\d+|out)\{\}", k)]
    if parts:
        return sum(parts)
    if "bytes accessed" in cost:
        return float(cost["bytes accessed"])
    return None


@dataclass
class Shape:
    """One validated shape: its sizes, the arrays' (shape, dtype) and the scalars;
    outputs are the output arrays' (shape, dtype) (an inout is in both)."""
    env: dict
    arrays: dict
    scalars: dict
    min_bytes: int
    outputs: dict = None


def compile_one(run, shape: Shape, dev, tracer):
    """Lower and compile run() for one shape on one TPU device; returns the
    compiled program. Raises what lowering or compiling raises."""
    import jax

    sharding = jax.sharding.SingleDeviceSharding(dev)
    structs = {k: jax.ShapeDtypeStruct(s, d, sharding=sharding) for k, (s, d) in shape.arrays.items()}
    scalars = shape.scalars

    def f(arrs):
        tracer.interpret = False
        return run({**arrs, **scalars}, interpret=False)

    # The Pallas TPU lowering asks the default device for the chip's
    # generation and VMEM size; without this it sees the CPU.
    with jax.default_device(dev):
        lowered = jax.jit(f).lower(structs)
        if "tpu_custom_call" not in lowered.as_text():
            raise NoKernel("with interpret=False the program holds no Mosaic kernel (no pallas_call was lowered)")
        return lowered.compile()


class NoKernel(Exception):
    """The TPU program has no Pallas kernel in it."""


def gate(run, shapes: list[Shape], devs: dict, tracer, key=None) -> dict:
    """Compile every shape for every chip: chip -> the verdict's ChipCompile
    fields (validators/validate.go)."""
    key = key or (lambda env: ",".join(f"{k}={env[k]}" for k in sorted(env)))
    largest = max(shapes, key=lambda s: s.min_bytes)
    out = {}
    for c, dev in devs.items():
        try:
            out[c] = _compile_chip(run, shapes, largest, CHIPS[c], dev, tracer, key)
        finally:
            tracer.interpret = True
    return out


def _compile_chip(run, shapes, largest, chip: Chip, dev, tracer, key) -> dict:
    """One chip: every shape until the first that fails; the cost numbers
    come from the largest shape's compiled program."""
    t0 = time.monotonic()
    rec = {"topology": chip.topology, "compiled": False, "shape": largest.env, "min_bytes": largest.min_bytes}
    for s in shapes:
        try:
            compiled = compile_one(run, s, dev, tracer)
        except Exception as e:  # noqa: BLE001 - the compiler's refusal is the verdict
            rec.update(shape=s.env, min_bytes=s.min_bytes, error=f"on {key(s.env)}: {first_lines(e)}",
                       compile_s=round(time.monotonic() - t0, 4))
            return rec
        if s is largest:
            b = _cost_bytes(compiled)
            if b is not None:
                rec["bytes_accessed"] = b
                rec["roofline_s"] = b / chip.device_bandwidth
            lb = layout_min_bytes(s, dev)
            if lb is not None:
                rec["layout_min_bytes"] = lb
    rec["compiled"] = True
    rec["compile_s"] = round(time.monotonic() - t0, 4)
    return rec


def layout_min_bytes(shape: Shape, dev) -> float | None:
    """The minimum traffic measured the way bytes_accessed is: per input and
    per output array, the bytes its operand entry ('bytes accessed0{}') counts
    in a compiled program that reads it once (its negation), so the array in
    its own HBM layout, whole tiles: a (130, 97) float32 array counts as
    (136, 128), 69632 bytes, not 50440. Inputs and outputs summed (an inout
    counts twice, as in min_bytes). None when there are no outputs or a
    compile fails."""
    if not shape.outputs:
        return None
    import jax
    import jax.numpy as jnp

    sharding = jax.sharding.SingleDeviceSharding(dev)
    seen = {}

    def one(s, d):
        if int(np.prod(s, dtype=np.int64)) == 0:
            return 0.0
        key = (tuple(s), str(d))
        if key not in seen:
            neg = jnp.logical_not if np.dtype(d) == np.bool_ else jnp.negative
            with jax.default_device(dev):
                cost = jax.jit(neg).lower(jax.ShapeDtypeStruct(s, d, sharding=sharding)).compile().cost_analysis()
            if isinstance(cost, (list, tuple)):
                cost = cost[0] if cost else {}
            seen[key] = float(cost["bytes accessed0{}"])
        return seen[key]

    try:
        return sum(one(s, d) for s, d in [*shape.arrays.values(), *shape.outputs.values()])
    except Exception:  # noqa: BLE001 - the number is optional
        return None


def _cost_bytes(compiled):
    try:
        return bytes_accessed(compiled.cost_analysis())
    except Exception:  # noqa: BLE001 - the numbers are optional, the compile is not
        return None


def probe(chips=DEFAULT_CHIPS) -> dict:
    """Whether deviceless compiles work here: compiles a tiny Pallas kernel
    for each chip (for `pallasify doctor`)."""
    res = {"libtpu": libtpu_version(), "chips": list(CHIPS), "default": list(DEFAULT_CHIPS), "compile": {}}
    if res["libtpu"] is None:
        return res
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    def f(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))(x)

    try:
        devs = devices(list(chips))
    except Unavailable as e:
        res["error"] = str(e)
        return res
    for c, dev in devs.items():
        t0 = time.monotonic()
        try:
            with jax.default_device(dev):
                s = jax.ShapeDtypeStruct((8, 128), jnp.float32, sharding=jax.sharding.SingleDeviceSharding(dev))
                jax.jit(f).lower(s).compile()
            res["compile"][c] = {"ok": True, "s": round(time.monotonic() - t0, 3)}
        except Exception as e:  # noqa: BLE001
            res["compile"][c] = {"ok": False, "error": first_lines(e)}
    return res
