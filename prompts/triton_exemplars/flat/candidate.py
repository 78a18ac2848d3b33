"""Pallas TPU draft of the Triton kernel scaled_add_kernel (kernel.py:8), translated by pallasify's Triton rules (flat blocks: the tensors in lane-dense (rows, 128) tiles, tail padded and masked)."""
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _round_up(v, m):
    return (v + m - 1) // m * m


def _next_pow2(v):
    return 1 if v <= 1 else 1 << (v - 1).bit_length()


def _sigmoid(v):
    return 1.0 / (1.0 + jnp.exp(-v))


# tl.maximum / tl.minimum do not propagate NaN (the other operand wins).
def _fmax(a, b):
    return jnp.where(a != a, b, jnp.where(b != b, a, jnp.maximum(a, b)))


def _fmin(a, b):
    return jnp.where(a != a, b, jnp.where(b != b, a, jnp.minimum(a, b)))


def _kernel(x_ptr_ref, y_ptr_ref, out_ptr_oref, *, _bound, _block, _bm, alpha):
    _shape = (_bm, 128)
    _lane = (pl.program_id(0) * _bm + lax.broadcasted_iota(jnp.int32, _shape, 0)) * 128 + lax.broadcasted_iota(jnp.int32, _shape, 1)
    _valid = _lane < _bound
    v_x = jnp.where(_valid, x_ptr_ref[...], 0.0)
    v_y = jnp.where(_valid, y_ptr_ref[...], 0.0)
    out_ptr_oref[...] = jnp.broadcast_to((v_x + (alpha * v_y)), out_ptr_oref.shape).astype(out_ptr_oref.dtype)


def run(args, *, interpret):
    n = args["x_ptr"].shape[0]
    rows = max(1, -(-n // 128))
    bm = min(512, _round_up(rows, 8))
    rows_p = _round_up(rows, bm)
    res = pl.pallas_call(
        functools.partial(_kernel, _bound=n, _block=1024, _bm=bm, alpha=args["alpha"]),
        grid=(rows_p // bm,),
        in_specs=[pl.BlockSpec((bm, 128), lambda i: (i, 0)), pl.BlockSpec((bm, 128), lambda i: (i, 0))],
        out_specs=[pl.BlockSpec((bm, 128), lambda i: (i, 0))],
        out_shape=[jax.ShapeDtypeStruct((rows_p, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(jnp.pad(args["x_ptr"].astype(jnp.float32), (0, rows_p * 128 - n)).reshape(rows_p, 128), jnp.pad(args["y_ptr"].astype(jnp.float32), (0, rows_p * 128 - n)).reshape(rows_p, 128))
    return {"out_ptr": res[0].reshape(-1)[:n]}
