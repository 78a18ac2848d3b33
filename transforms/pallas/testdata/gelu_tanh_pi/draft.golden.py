"""Pallas TPU draft of CUDA kernel gelu_tanh_kernel (kernel.cu:5), drafted by pallasify rules
(elementwise).
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(x_ref, y_ref):
    x = x_ref[...]
    y_ref[...] = (
        (jnp.float32(0.5) * x)
        * (
            jnp.float32(1.0)
            + jnp.tanh(
                (
                    jnp.sqrt((jnp.float32(2.0) / jnp.float32(3.141592653589793)))
                    * (x + (((jnp.float32(0.044714998453855515) * x) * x) * x))
                )
            )
        )
    ) + (jnp.float32(2.718281828459045) * jnp.float32(0.0))


def run(args, *, interpret):
    x = args["x"]
    n = int(args["n"])
    extent_x = n
    D = extent_x
    if D <= 0:
        return {"y": jnp.zeros((n,), jnp.float32)}
    cols = 128
    rows = D // cols if D % cols == 0 else pl.cdiv(D, 1024) * 8
    block_cols = min(cols, 2048 if rows >= 8 else 65536)
    block_rows = min(rows, max(8, 65536 // block_cols // 8 * 8))
    spec = pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j))
    outs = pl.pallas_call(
        _kernel,
        grid=(pl.cdiv(rows, block_rows), pl.cdiv(cols, block_cols)),
        in_specs=[spec],
        out_specs=[spec],
        out_shape=[jax.ShapeDtypeStruct((rows, cols), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel"), allow_input_fusion=[D % 128 != 0]
        ),
        interpret=interpret,
    )(jnp.pad(x, (0, rows * cols - D)).reshape(rows, cols))
    return {"y": outs[0].reshape(-1)[:D]}
