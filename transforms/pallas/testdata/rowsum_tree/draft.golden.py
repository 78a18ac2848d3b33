"""Pallas TPU draft of CUDA kernel row_sum_tree_kernel (kernel.cu:4), drafted by pallasify rules
(row-reduction).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(x_ref, out_ref, *, cols, row_len, out_cols):
    block_rows = out_ref.shape[0]
    col = lax.broadcasted_iota(jnp.int32, (block_rows, row_len), 1)
    in_row = col < cols
    r1 = x_ref[...].astype(jnp.float32)
    r2 = jnp.where(in_row, r1, jnp.float32(0.0))
    u3 = jnp.sum(r2, axis=1, keepdims=True)
    ob4 = jnp.where(
        lax.broadcasted_iota(jnp.int32, (block_rows, out_cols), 1) == 0,
        u3,
        jnp.zeros((block_rows, out_cols), jnp.float32),
    )
    out_ref[...] = (ob4).reshape(out_ref.shape)


def run(args, *, interpret):
    x = args["x"]
    cols = int(args["cols"])
    rows = x.shape[0]
    grid_dim_x = rows
    n_rows = grid_dim_x
    length = cols
    if n_rows <= 0:
        return {"out": jnp.zeros((rows,), jnp.float32)}
    row_len = length
    out_cols = 1
    width = max([row_len, 256, (cols), out_cols])
    block_rows = max(8, min(256, (1 << 19) // (width * 3)) // 8 * 8)
    block_rows = min(block_rows, n_rows)
    dense = n_rows <= block_rows or block_rows >= 128
    if n_rows > block_rows and dense:
        block_rows = block_rows // 128 * 128
    outs = pl.pallas_call(
        functools.partial(_kernel, cols=cols, row_len=row_len, out_cols=out_cols),
        grid=(pl.cdiv(n_rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, (cols)), lambda i: (i, 0))],
        out_specs=[
            pl.BlockSpec((1, block_rows), lambda i: (0, i))
            if dense
            else pl.BlockSpec((block_rows, 1), lambda i: (i, 0))
        ],
        out_shape=[jax.ShapeDtypeStruct((1, n_rows) if dense else (n_rows, 1), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(x)
    return {"out": outs[0].reshape((rows,))}
