"""Pallas TPU draft of CUDA kernel layernorm_stats_kernel (kernel.cu:25), drafted by pallasify rules
(row-reduction).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(x_ref, y_ref, mean_ref, rstd_ref, *, cols, eps, row_len, mean_cols, rstd_cols):
    block_rows = y_ref.shape[0]
    col = lax.broadcasted_iota(jnp.int32, (block_rows, row_len), 1)
    in_row = col < cols
    r1 = x_ref[...].astype(jnp.float32)
    r2 = jnp.where(in_row, r1, jnp.float32(0.0))
    u3 = jnp.sum(r2, axis=1, keepdims=True)
    v4 = u3 / _cast(cols, jnp.float32)
    r5 = x_ref[...].astype(jnp.float32)
    v6 = r5 - v4
    r7 = jnp.where(in_row, (v6 * v6), jnp.float32(0.0))
    u8 = jnp.sum(r7, axis=1, keepdims=True)
    v9 = lax.rsqrt(((u8 / _cast(cols, jnp.float32)) + eps))
    r10 = x_ref[...].astype(jnp.float32)
    ob11 = jnp.broadcast_to(((r10 - v4) * v9), (block_rows, row_len))
    ob12 = jnp.where(
        lax.broadcasted_iota(jnp.int32, (block_rows, mean_cols), 1) == 0,
        v4,
        jnp.zeros((block_rows, mean_cols), jnp.float32),
    )
    ob13 = jnp.where(
        lax.broadcasted_iota(jnp.int32, (block_rows, rstd_cols), 1) == 0,
        v9,
        jnp.zeros((block_rows, rstd_cols), jnp.float32),
    )
    y_ref[...] = ob11
    mean_ref[...] = (ob12).reshape(mean_ref.shape)
    rstd_ref[...] = (ob13).reshape(rstd_ref.shape)


def run(args, *, interpret):
    x = args["x"]
    cols = int(args["cols"])
    eps = args["eps"]
    rows = x.shape[0]
    grid_dim_x = rows
    n_rows = grid_dim_x
    length = cols
    if n_rows <= 0:
        return {
            "y": jnp.zeros((rows, cols), jnp.float32),
            "mean": jnp.zeros((rows,), jnp.float32),
            "rstd": jnp.zeros((rows,), jnp.float32),
        }
    row_len = length
    y_cols = row_len
    mean_cols = 1
    rstd_cols = 1
    width = max([row_len, 256, (cols), y_cols, mean_cols, rstd_cols])
    block_rows = max(8, min(256, (1 << 19) // (width * 5)) // 8 * 8)
    block_rows = min(block_rows, n_rows)
    dense = n_rows <= block_rows or block_rows >= 128
    if n_rows > block_rows and dense:
        block_rows = block_rows // 128 * 128
    outs = pl.pallas_call(
        functools.partial(
            _kernel, cols=cols, eps=eps, row_len=row_len, mean_cols=mean_cols, rstd_cols=rstd_cols
        ),
        grid=(pl.cdiv(n_rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, (cols)), lambda i: (i, 0))],
        out_specs=[
            pl.BlockSpec((block_rows, y_cols), lambda i: (i, 0)),
            pl.BlockSpec((1, block_rows), lambda i: (0, i))
            if dense
            else pl.BlockSpec((block_rows, 1), lambda i: (i, 0)),
            pl.BlockSpec((1, block_rows), lambda i: (0, i))
            if dense
            else pl.BlockSpec((block_rows, 1), lambda i: (i, 0)),
        ],
        out_shape=[
            jax.ShapeDtypeStruct((n_rows, y_cols), jnp.float32),
            jax.ShapeDtypeStruct((1, n_rows) if dense else (n_rows, 1), jnp.float32),
            jax.ShapeDtypeStruct((1, n_rows) if dense else (n_rows, 1), jnp.float32),
        ],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(x)
    return {
        "y": outs[0].reshape((rows, cols)),
        "mean": outs[1].reshape((rows,)),
        "rstd": outs[2].reshape((rows,)),
    }


def _cast(x, dt):
    return jnp.asarray(x).astype(dt)
