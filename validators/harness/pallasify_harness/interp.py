"""JAX side: interpret-mode probing, the pallas_call launch tracer, ghost
replay, and loading the candidate module."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

try:
    from jax.experimental.pallas import tpu as pltpu
except ImportError:  # pragma: no cover - very old jax
    pltpu = None


def interpret_class():
    if pltpu is None:
        return None
    return getattr(pltpu, "InterpretParams", None) or getattr(pltpu, "TPUInterpretParams", None)


def probe() -> dict:
    """What the installed JAX offers for TPU interpret mode."""
    cls = interpret_class()
    fields = sorted(f.name for f in dataclasses.fields(cls)) if cls is not None else []
    return {
        "jax_version": jax.__version__,
        "interpret_params": cls.__name__ if cls is not None else None,
        "fields": fields,
        "checks": {
            "detect_races": "detect_races" in fields,
            "uninitialized_memory": "uninitialized_memory" in fields,
            "out_of_bounds_reads": "out_of_bounds_reads" in fields,
            "random_seed": "random_seed" in fields,
        },
        "reset": bool(pltpu is not None and hasattr(pltpu, "reset_tpu_interpret_mode_state")),
    }


def install_bitcast_refs() -> bool:
    """Teach jax's TPU interpreter the loads and stores through a same-width
    ref bitcast (`o_ref.bitcast(jnp.int16)[...] = bits` on a float16 block),
    which Mosaic compiles (tpu.memref_bitcast) and jax 0.10.2's interpreter
    refuses: its get/swap fold only indexers into a buffer range
    ("'BitcastTransform' object has no attribute 'indices'"). A bitcast between
    dtypes of one width keeps the shape and reinterprets each element's bits, so
    it commutes with the indexers: the access runs on the indexers alone and the
    value is a numpy view (.view(), no conversion) in the bitcast's dtype; a
    store's value is viewed as the buffer's dtype first. A bitcast that changes
    the width is left to jax (it still raises). Returns whether it is installed
    (False where this jax lacks the internals it wraps)."""
    try:
        from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ipc
        from jax._src.state import types as state_types
    except ImportError:
        return False
    if getattr(ipc, "_pallasify_bitcast_refs", False):
        return True
    needed = ("get", "swap", "_get_shared_memory", "_local_core_id_or_zero_if_hbm", "TPU_MEMORY_SPACE_NAMES")
    if not all(hasattr(ipc, n) for n in needed) or not hasattr(state_types, "BitcastTransform"):
        return False
    get0, swap0 = ipc.get, ipc.swap

    def split(transforms):
        """(the indexers, the dtype of the last bitcast or None)."""
        if not isinstance(transforms, (list, tuple)):
            return transforms, None
        rest, dt = [], None
        for t in transforms:
            if isinstance(t, state_types.BitcastTransform):
                dt = np.dtype(t.dtype)
            else:
                rest.append(t)
        return type(transforms)(rest), dt

    def buffer_dtype(device_id, local_core_id, memory_space, buffer_id):
        space = ipc.TPU_MEMORY_SPACE_NAMES[int(memory_space)]
        core = ipc._local_core_id_or_zero_if_hbm(int(local_core_id), space)
        return np.dtype(ipc._get_shared_memory().mem[(space, int(buffer_id), int(device_id), core)].dtype)

    def get(token, device_id, local_core_id, memory_space, buffer_id, transforms, *args, **kwargs):
        rest, dt = split(transforms)
        if dt is None or dt.itemsize != buffer_dtype(device_id, local_core_id, memory_space, buffer_id).itemsize:
            return get0(token, device_id, local_core_id, memory_space, buffer_id, transforms, *args, **kwargs)
        token, ret = get0(token, device_id, local_core_id, memory_space, buffer_id, rest, *args, **kwargs)
        return token, np.asarray(ret).view(dt)

    def swap(token, device_id, local_core_id, memory_space, buffer_id, transforms, val, mask, **kwargs):
        rest, dt = split(transforms)
        bdt = buffer_dtype(device_id, local_core_id, memory_space, buffer_id) if dt is not None else None
        if dt is None or dt.itemsize != bdt.itemsize:
            return swap0(token, device_id, local_core_id, memory_space, buffer_id, transforms, val, mask, **kwargs)
        val = np.asarray(val)
        assert val.dtype == dt, (val.dtype, dt)
        token, ret = swap0(token, device_id, local_core_id, memory_space, buffer_id, rest, val.view(bdt), mask,
                           **kwargs)
        return token, np.asarray(ret).view(dt)

    ipc.get, ipc.swap = get, swap
    ipc._pallasify_bitcast_refs = True
    return True


def make_interpret(poison: str = "nan", seed: int | None = None):
    """(interpret value, active checks) for one candidate run."""
    cls = interpret_class()
    if cls is None:
        return True, {}
    install_bitcast_refs()
    fields = {f.name for f in dataclasses.fields(cls)}
    kw, active = {}, {}
    if "detect_races" in fields:
        kw["detect_races"] = True
        active["detect_races"] = True
    if "uninitialized_memory" in fields:
        kw["uninitialized_memory"] = poison
        active["uninitialized_memory"] = poison
    if "out_of_bounds_reads" in fields:
        kw["out_of_bounds_reads"] = "raise"
        active["out_of_bounds_reads"] = "raise"
    if "random_seed" in fields and seed is not None:
        kw["random_seed"] = seed
        active["random_seed"] = True
    return cls(**kw), active


def reset_state():
    if pltpu is not None and hasattr(pltpu, "reset_tpu_interpret_mode_state"):
        pltpu.reset_tpu_interpret_mode_state()


def races_found() -> bool:
    try:
        from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ipc
    except ImportError:
        return False
    r = getattr(ipc, "races", None)
    return bool(r is not None and getattr(r, "races_found", False))


class LaunchTracer:
    """Wraps pl.pallas_call before the candidate is imported: counts calls,
    forces the harness's interpret parameters, and in ghost mode replaces the
    kernel by outputs full of poison (a candidate whose result survives that
    does not compute through its pallas_call)."""

    def __init__(self):
        self.count = 0
        self.interpret = True
        self.ghost = False
        self.foreign_interpret = []
        self._orig = pl.pallas_call

    def install(self):
        tracer = self
        orig = self._orig

        def pallas_call(*args, **kwargs):
            tracer.count += 1
            if "interpret" in kwargs and kwargs["interpret"] is not tracer.interpret:
                tracer.foreign_interpret.append(repr(kwargs["interpret"])[:80])
            kwargs["interpret"] = tracer.interpret
            if tracer.ghost:
                out_shape = kwargs.get("out_shape", args[1] if len(args) > 1 else None)

                def ghost(*_a, **_k):
                    return jax.tree_util.tree_map(_poison_like, out_shape)

                return ghost
            return orig(*args, **kwargs)

        pallas_call.__wrapped__ = orig
        pl.pallas_call = pallas_call

    def uninstall(self):
        pl.pallas_call = self._orig


def _poison_like(s):
    dt = np.dtype(s.dtype)
    if jnp.issubdtype(dt, jnp.floating):
        return jnp.full(s.shape, jnp.nan, dt)
    if dt == np.bool_:
        return jnp.zeros(s.shape, dt)
    return jnp.full(s.shape, jnp.iinfo(dt).max, dt)


def has_pallas_call(jaxpr) -> bool:
    """Search a (closed) jaxpr and its sub-jaxprs for the pallas_call primitive."""
    seen = set()

    def walk(j):
        j = getattr(j, "jaxpr", j)
        if id(j) in seen or not hasattr(j, "eqns"):
            return False
        seen.add(id(j))
        for eqn in j.eqns:
            if eqn.primitive.name == "pallas_call":
                return True
            for v in eqn.params.values():
                vs = v if isinstance(v, (list, tuple)) else [v]
                for x in vs:
                    if hasattr(x, "eqns") or hasattr(x, "jaxpr"):
                        if walk(x):
                            return True
        return False

    return walk(jaxpr)


def load_candidate(path: str):
    spec = importlib.util.spec_from_file_location("pallasify_candidate", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pallasify_candidate"] = mod
    spec.loader.exec_module(mod)
    return mod
