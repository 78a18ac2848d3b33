"""Pallas TPU draft of CUDA kernel max_pool_kernel (kernel.cu:6), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(
    input_ref,
    output_ref,
    *,
    input_height,
    input_width,
    pool_height,
    pool_width,
    stride,
    extent_y,
    extent_x,
):
    shape = output_ref.shape
    row = pl.program_id(0) * shape[0] + lax.broadcasted_iota(jnp.int32, shape, 0)
    d = row * shape[1] + lax.broadcasted_iota(jnp.int32, shape, 1)
    i_x = _c_rem(d, extent_x, jnp.int32)
    q_x = _c_div(d, extent_x, jnp.int32)
    i_y = _c_rem(q_x, extent_y, jnp.int32)
    max_val = -jnp.float32(3.4028234663852886e38)
    for h in range(pool_height):
        for w in range(pool_width):
            input = input_ref[h * pool_width + w]
            v4 = jnp.fmax(max_val, input)
            v5 = jnp.where(
                jnp.logical_and(
                    (((i_y * stride) + h) < input_height), (((i_x * stride) + w) < input_width)
                ),
                v4,
                max_val,
            )
            max_val = v5
    output_ref[...] = max_val


def run(args, *, interpret):
    input = args["input"]
    input_height = args["input_height"]
    input_width = args["input_width"]
    pool_height = args["pool_height"]
    pool_width = args["pool_width"]
    stride = args["stride"]
    output_height = args["output_height"]
    output_width = args["output_width"]
    channels = input.shape[0]
    ih = int(input_height)
    iw = int(input_width)
    k = int(pool_height)
    s = int(stride)
    grid_dim_z = channels
    extent_z = grid_dim_z * 1
    extent_y = output_height
    extent_x = output_width
    D = extent_z * extent_y * extent_x
    if D <= 0:
        return {
            "output": jnp.zeros(
                (
                    channels,
                    (_c_div((ih - k), s, jnp.int32) + 1),
                    (_c_div((iw - k), s, jnp.int32) + 1),
                ),
                jnp.float32,
            )
        }
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    d = jnp.arange(size, dtype=jnp.int32)
    i_x = _c_rem(d, extent_x, jnp.int32)
    q_x = _c_div(d, extent_x, jnp.int32)
    i_y = _c_rem(q_x, extent_y, jnp.int32)
    q_y = _c_div(q_x, extent_y, jnp.int32)
    i_z = q_y
    ins = [
        _gather_loop(
            input,
            [
                (
                    0
                    + (
                        (
                            ((i_z * input_height) * input_width)
                            + (((i_y * stride) + h) * input_width)
                        )
                        + ((i_x * stride) + w)
                    )
                )
                for h in range(pool_height)
                for w in range(pool_width)
            ],
            size,
            lanes,
        ),
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        functools.partial(
            _kernel,
            input_height=input_height,
            input_width=input_width,
            pool_height=pool_height,
            pool_width=pool_width,
            stride=stride,
            extent_y=extent_y,
            extent_x=extent_x,
        ),
        grid=(padded_rows // block_rows,),
        in_specs=[pl.BlockSpec((ins[0].shape[0], block_rows, lanes), lambda i: (0, i, 0))],
        out_specs=[spec] * 1,
        out_shape=[jax.ShapeDtypeStruct((padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_output = _unblock(
        outs[0],
        D,
        (channels, (_c_div((ih - k), s, jnp.int32) + 1), (_c_div((iw - k), s, jnp.int32) + 1)),
        jnp.float32,
    )
    return {
        "output": r_output.reshape(
            (channels, (_c_div((ih - k), s, jnp.int32) + 1), (_c_div((iw - k), s, jnp.int32) + 1))
        )
    }


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


def _layout(n, sub):
    """Lane-dense layout of n elements: (lanes, block rows, padded rows)."""
    lanes = 512 if n >= 512 * 64 else 128
    rows = pl.cdiv(n, lanes)
    br = min(_round_up(rows, sub), 64 if lanes == 512 else 256)
    br = _round_up(br, sub)
    return lanes, br, _round_up(rows, br)


def _gather(a, idx, dp, lanes):
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    return jnp.take(a.reshape(-1), idx, mode="clip").reshape(dp // lanes, lanes)


def _gather_loop(a, idxs, dp, lanes):
    """a gathered at each iteration's indices: (iterations, dp // lanes, lanes)."""
    if not idxs:
        return jnp.zeros((1, dp // lanes, lanes), a.dtype)
    return jnp.stack([_gather(a, i, dp, lanes) for i in idxs])


def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)
