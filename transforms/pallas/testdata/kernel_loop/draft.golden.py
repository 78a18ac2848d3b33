"""Pallas TPU draft of CUDA kernel hard_swish_kernel (kernel.cu:9), drafted by pallasify rules
(elementwise).
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(input_ref, output_ref):
    input = input_ref[...]
    output_ref[...] = (
        input * jnp.fmin(jnp.fmax((input + jnp.float32(3.0)), jnp.float32(0.0)), jnp.float32(6.0))
    ) / jnp.float32(6.0)


def run(args, *, interpret):
    nthreads = int(args["nthreads"])
    input = args["input"]
    extent_x = nthreads
    D = extent_x
    if D <= 0:
        return {"output": jnp.zeros((nthreads,), jnp.float32)}
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
    )(jnp.pad(input, (0, rows * cols - D)).reshape(rows, cols))
    return {"output": outs[0].reshape(-1)[:D]}
