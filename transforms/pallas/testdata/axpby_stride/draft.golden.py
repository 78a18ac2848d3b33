"""Pallas TPU draft of CUDA kernel axpby_kernel (kernel.cu:4), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(x_ref, y_ref, out_ref, *, a, b):
    x = x_ref[...]
    y = y_ref[...]
    out_ref[...] = (a * x) + (b * y)


def run(args, *, interpret):
    x = args["x"]
    y = args["y"]
    a = args["a"]
    b = args["b"]
    n = int(args["n"])
    extent_x = n
    D = extent_x
    if D <= 0:
        return {"out": jnp.zeros((n,), jnp.float32)}
    cols = 128
    rows = D // cols if D % cols == 0 else pl.cdiv(D, 1024) * 8
    block_cols = min(cols, 2048 if rows >= 8 else 65536)
    block_rows = min(rows, max(8, 65536 // block_cols // 8 * 8))
    spec = pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j))
    outs = pl.pallas_call(
        functools.partial(_kernel, a=a, b=b),
        grid=(pl.cdiv(rows, block_rows), pl.cdiv(cols, block_cols)),
        in_specs=[spec, spec],
        out_specs=[spec],
        out_shape=[jax.ShapeDtypeStruct((rows, cols), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel"),
            allow_input_fusion=[D % 128 != 0, D % 128 != 0],
        ),
        interpret=interpret,
    )(
        jnp.pad(x, (0, rows * cols - D)).reshape(rows, cols),
        jnp.pad(y, (0, rows * cols - D)).reshape(rows, cols),
    )
    return {"out": outs[0].reshape(-1)[:D]}
