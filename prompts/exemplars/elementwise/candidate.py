"""Pallas TPU draft of silu_scale_kernel: y = alpha * x * sigmoid(x).

The 1-D array is padded to whole (8, 128) tiles and viewed as (rows, 128) so
blocks match the TPU's 8x128 vreg tiling; a 1-D grid walks row blocks in
parallel. The scalar alpha is baked in with functools.partial; math is f32.
"""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

LANES = 128
BLOCK_ROWS = 8


def _kernel(x_ref, y_ref, *, alpha):
    v = x_ref[...].astype(jnp.float32)
    y_ref[...] = (alpha * v / (1.0 + jnp.exp(-v))).astype(y_ref.dtype)


def run(args, *, interpret):
    x = args["x"]
    n = x.shape[0]
    tile = BLOCK_ROWS * LANES
    n_p = (n + tile - 1) // tile * tile
    x2 = jnp.pad(x, (0, n_p - n)).reshape(n_p // LANES, LANES)
    spec = pl.BlockSpec((BLOCK_ROWS, LANES), lambda i: (i, 0))
    y2 = pl.pallas_call(
        functools.partial(_kernel, alpha=float(args["alpha"])),
        grid=(n_p // tile,),
        in_specs=[spec],
        out_specs=spec,
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(x2)
    return {"y": y2.reshape(-1)[:n]}
