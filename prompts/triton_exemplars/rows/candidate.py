"""Pallas TPU draft of the Triton kernel softmax_kernel (kernel.py:8), translated by pallasify's Triton rules (row kernel: blocks of whole rows, columns padded to 128 lanes and masked)."""
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


def _rsum(v, inblk):
    return jnp.sum(jnp.where(inblk, v, jnp.zeros((), v.dtype)), axis=1, keepdims=True)


def _rmax(v, inblk):
    return jnp.max(jnp.where(inblk, v, -jnp.inf), axis=1, keepdims=True)


def _rmin(v, inblk):
    return jnp.min(jnp.where(inblk, v, jnp.inf), axis=1, keepdims=True)


def _kernel(in_ptr_ref, out_ptr_oref, *, _bound, _block, _bm):
    _lane = lax.broadcasted_iota(jnp.int32, (1, in_ptr_ref.shape[1]), 1)
    _valid = _lane < _bound
    _inblk = _lane < _block
    v_x = jnp.where(_valid, in_ptr_ref[...], (-jnp.inf))
    v_x = (v_x - _rmax(v_x, _inblk))
    v_num = jnp.exp(v_x)
    v_den = _rsum(v_num, _inblk)
    out_ptr_oref[...] = jnp.broadcast_to((v_num / v_den), out_ptr_oref.shape).astype(out_ptr_oref.dtype)


def run(args, *, interpret):
    rows, cols = args["in_ptr"].shape
    block = _next_pow2(cols)
    cp = _round_up(block, 128)
    bm = max(8, min(_round_up(rows, 8), 256, 12582912 // (cp * 4 * 2 * 2) // 8 * 8))
    rows_p = _round_up(rows, bm)
    res = pl.pallas_call(
        functools.partial(_kernel, _bound=cols, _block=block, _bm=bm),
        grid=(rows_p // bm,),
        in_specs=[pl.BlockSpec((bm, cp), lambda i: (i, 0))],
        out_specs=[pl.BlockSpec((bm, cp), lambda i: (i, 0))],
        out_shape=[jax.ShapeDtypeStruct((rows_p, cp), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(jnp.pad(args["in_ptr"].astype(jnp.float32), ((0, rows_p - rows), (0, cp - cols))))
    return {"out_ptr": res[0][:rows, :cols]}
