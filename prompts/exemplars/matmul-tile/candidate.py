"""Pallas TPU draft of linear_bias_kernel: 128x128x128 tiles.

Grid (m/bm, n/bn, k/bk) with the reduction axis LAST and "arbitrary"; an f32
VMEM accumulator is zeroed at kk == 0 and written out (plus the bias block) at
the last kk. Operands are zero-padded to whole tiles; the result is sliced.
"""
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = BN = BK = 128


def _round_up(v, m):
    return (v + m - 1) // m * m


def _kernel(x_ref, w_ref, b_ref, y_ref, acc_ref, *, nk):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], precision=lax.Precision.HIGHEST,
                            preferred_element_type=jnp.float32)

    @pl.when(kk == nk - 1)
    def _store():
        y_ref[...] = (acc_ref[...] + b_ref[...]).astype(y_ref.dtype)


def run(args, *, interpret):
    x, w, b = args["X"], args["W"], args["b"]
    m, k = x.shape
    n = w.shape[1]
    mp, np_, kp = _round_up(m, BM), _round_up(n, BN), _round_up(k, BK)
    xp = jnp.pad(x, ((0, mp - m), (0, kp - k)))
    wp = jnp.pad(w, ((0, kp - k), (0, np_ - n)))
    bp = jnp.pad(b, (0, np_ - n)).reshape(1, np_)
    nk = kp // BK
    y = pl.pallas_call(
        functools.partial(_kernel, nk=nk),
        grid=(mp // BM, np_ // BN, nk),
        in_specs=[pl.BlockSpec((BM, BK), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((BK, BN), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((1, BN), lambda i, j, kk: (0, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j, kk: (i, j)),
        out_shape=jax.ShapeDtypeStruct((mp, np_), jnp.float32),
        scratch_shapes=[pltpu.VMEM((BM, BN), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=interpret,
    )(xp, wp, bp)
    return {"Y": y[:m, :n]}
