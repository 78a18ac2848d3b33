"""Pallas TPU draft of CUDA kernel focal_loss_kernel (kernel.cu:5), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(target_ref, input_ref, output_ref, *, gamma, alpha, num_classes, cols):
    shape = output_ref.shape
    row = pl.program_id(0) * shape[0] + lax.broadcasted_iota(jnp.int32, shape, 0)
    col = pl.program_id(1) * shape[1] + lax.broadcasted_iota(jnp.int32, shape, 1)
    d = row * cols + col
    i_x = d
    target = target_ref[...].reshape(shape[0], 1)
    input = input_ref[...]
    v1 = _cast((target == _c_rem(i_x, num_classes, jnp.int32)), jnp.float32)
    v2 = _cast((target != _c_rem(i_x, num_classes, jnp.int32)), jnp.float32)
    v3 = jnp.float32(1.0) / (jnp.float32(1.0) + jnp.exp((-input)))
    v4 = jnp.power((jnp.float32(1.0) - v3), gamma) * jnp.log(
        jnp.fmax(v3, jnp.float32(1.1754943508222875e-38))
    )
    v5 = jnp.power(v3, gamma) * jnp.log(
        jnp.fmax((jnp.float32(1.0) - v3), jnp.float32(1.1754943508222875e-38))
    )
    output_ref[...] = jnp.full(output_ref.shape, jnp.float32(0.0), output_ref.dtype)
    output_ref[...] = jnp.float32(0.0) + (((-v1) * alpha) * v4)
    output_ref[...] = (jnp.float32(0.0) + (((-v1) * alpha) * v4)) + (
        ((-v2) * (jnp.float32(1.0) - alpha)) * v5
    )


def run(args, *, interpret):
    if args["weight"].size:
        raise ValueError(
            "weight: this draft covers the launches where it is NULL (an empty tensor)"
        )
    nthreads = args["nthreads"]
    input = args["input"]
    target = args["target"]
    gamma = args["gamma"]
    alpha = args["alpha"]
    num_classes = args["num_classes"]
    rows = input.shape[0]
    classes = int(num_classes)
    extent_x = nthreads
    D = extent_x
    if D <= 0:
        return {"output": jnp.zeros((rows, classes), jnp.float32)}
    view_rows = rows
    cols = classes
    block_cols = min(cols, 2048 if view_rows >= 8 else 65536)
    block_rows = min(view_rows, max(128, 65536 // block_cols // 128 * 128))
    spec = pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j))
    outs = pl.pallas_call(
        functools.partial(_kernel, gamma=gamma, alpha=alpha, num_classes=num_classes, cols=cols),
        grid=(pl.cdiv(view_rows, block_rows), pl.cdiv(cols, block_cols)),
        in_specs=[pl.BlockSpec((1, block_rows), lambda i, j: (0, i)), spec],
        out_specs=[spec],
        out_shape=[jax.ShapeDtypeStruct((view_rows, cols), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel"), allow_input_fusion=[True, False]
        ),
        interpret=interpret,
    )(target.reshape(1, view_rows), input)
    return {"output": outs[0]}


def _c_div(a, b, dt):
    """C integer division (truncates toward zero)."""
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    a, b = jnp.broadcast_arrays(jnp.asarray(a, dt), jnp.asarray(b, dt))
    return lax.div(a, b)


def _c_rem(a, b, dt):
    """C remainder (takes the sign of the dividend)."""
    if isinstance(a, int) and isinstance(b, int):
        return a - _c_div(a, b, dt) * b
    a, b = jnp.broadcast_arrays(jnp.asarray(a, dt), jnp.asarray(b, dt))
    return lax.rem(a, b)


def _cast(x, dt):
    return jnp.asarray(x).astype(dt)
