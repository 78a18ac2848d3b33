"""Pallas TPU draft of CUDA kernel focal_loss_kernel (kernel.cu:5), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(target_ref, input_ref, output_ref, *, gamma, alpha, num_classes):
    shape = output_ref.shape
    row = pl.program_id(0) * shape[0] + lax.broadcasted_iota(jnp.int32, shape, 0)
    d = row * shape[1] + lax.broadcasted_iota(jnp.int32, shape, 1)
    i_x = d
    target = target_ref[...]
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
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    d = jnp.arange(size, dtype=jnp.int32)
    i_x = d
    ins = [
        _gather(target, (0 + _c_div(i_x, num_classes, jnp.int32)), size, lanes),
        _blocked(input, size, lanes),
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        functools.partial(_kernel, gamma=gamma, alpha=alpha, num_classes=num_classes),
        grid=(padded_rows // block_rows,),
        in_specs=[spec] * len(ins),
        out_specs=[spec] * 1,
        out_shape=[jax.ShapeDtypeStruct((padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_output = _unblock(outs[0], D, (rows, classes), jnp.float32)
    return {"output": r_output.reshape((rows, classes))}


def _round_up(v, m):
    return (v + m - 1) // m * m


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


def _layout(n, sub):
    """Lane-dense layout of n elements: (lanes, block rows, padded rows)."""
    lanes = 512 if n >= 512 * 64 else 128
    rows = pl.cdiv(n, lanes)
    br = min(_round_up(rows, sub), 64 if lanes == 512 else 256)
    br = _round_up(br, sub)
    return lanes, br, _round_up(rows, br)


def _blocked(a, dp, lanes):
    flat = a.reshape(-1)
    return jnp.pad(flat, (0, dp - flat.shape[0])).reshape(dp // lanes, lanes)


def _gather(a, idx, dp, lanes):
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    return jnp.take(a.reshape(-1), idx, mode="clip").reshape(dp // lanes, lanes)


def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)
