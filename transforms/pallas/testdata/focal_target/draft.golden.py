"""Pallas TPU draft of CUDA kernel focal_loss_kernel (kernel.cu:5), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(target_ref, input_ref, output_ref, *, gamma, alpha, num_classes, cols, transposed):
    shape = output_ref.shape
    row = pl.program_id(0) * shape[0] + lax.broadcasted_iota(jnp.int32, shape, 0)
    col = pl.program_id(1) * shape[1] + lax.broadcasted_iota(jnp.int32, shape, 1)
    if transposed:  # blocks of the arrays' transposes: axis 0 runs over the columns
        row, col = col, row
    d = row * cols + col
    i_x = d
    target = target_ref[...] if transposed else target_ref[...].reshape(shape[0], 1)
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
    transposed = _column_major(view_rows, cols)
    kernel_rows, kernel_cols = (cols, view_rows) if transposed else (view_rows, cols)
    block_cols = min(kernel_cols, 2048 if kernel_rows >= 8 else 65536)
    rows_mult = 8 if transposed else 128
    block_rows = min(kernel_rows, max(rows_mult, 65536 // block_cols // rows_mult * rows_mult))
    spec = pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j))
    per_row = pl.BlockSpec((1, block_rows), lambda i, j: (0, i))
    per_col = pl.BlockSpec((1, block_cols), lambda i, j: (0, j))
    outs = pl.pallas_call(
        functools.partial(
            _kernel,
            gamma=gamma,
            alpha=alpha,
            num_classes=num_classes,
            cols=cols,
            transposed=transposed,
        ),
        grid=(pl.cdiv(kernel_rows, block_rows), pl.cdiv(kernel_cols, block_cols)),
        in_specs=[per_col if transposed else per_row, spec],
        out_specs=[spec],
        out_shape=[jax.ShapeDtypeStruct((kernel_rows, kernel_cols), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel"), allow_input_fusion=[True, False]
        ),
        interpret=interpret,
    )(target.reshape(1, view_rows), (input.T if transposed else input))
    return {"output": (outs[0].T if transposed else outs[0])}


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


_FORCE = None  # set by the validator only (pallasify_harness); None when a user imports it


def _form(name, natural, applies=True):
    """Whether run() takes the first of the two forms of decision name (the helper that decides):
    natural, the choice of the shapes, unless the validator, to prove both, forces one through
    _FORCE (the first only where it applies)."""
    return natural if _FORCE is None else _FORCE(name, natural, applies)


def _column_major(rows, cols):
    """Whether XLA keeps a (rows, cols) array of 32- or 16-bit values column-major on a TPU:
    the (8, 128)-tiled layout that pads it less, row-major on a tie (libtpu 0.0.52: v5e, v6e,
    TPU7x). Only the traffic depends on it; the kernel then runs over the transposes."""
    by_rows = pl.cdiv(rows, 8) * 8 * pl.cdiv(cols, 128) * 128
    by_cols = pl.cdiv(cols, 8) * 8 * pl.cdiv(rows, 128) * 128
    return _form("column_major", by_cols < by_rows)
