"""Pallas TPU draft of CUDA kernel three_interp_kernel (kernel.cu:11), drafted by pallasify rules
(elementwise).
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(
    weight_ref, points_ref, weight_1_ref, points_1_ref, weight_2_ref, points_2_ref, out_ref
):
    weight = weight_ref[...]
    points = points_ref[...]
    weight_1 = weight_1_ref[...]
    points_1 = points_1_ref[...]
    weight_2 = weight_2_ref[...]
    points_2 = points_2_ref[...]
    out_ref[...] = _f16(
        _f16(_f16(weight * points) + _f16(weight_1 * points_1)) + _f16(weight_2 * points_2)
    )


def run(args, *, interpret):
    b = int(args["b"])
    c = int(args["c"])
    m = args["m"]
    n = int(args["n"])
    points = args["points"].astype(jnp.float32)
    idx = args["idx"]
    weight = args["weight"].astype(jnp.float32)
    block_dim_x = 256
    grid_dim_x = min(_c_div((n + 255), 256, jnp.int32), 4096)
    extent_z = b
    extent_y = c
    extent_x = n
    if grid_dim_x * block_dim_x < extent_x:
        raise ValueError(
            "pointers move in the grid-stride loop: needs grid.x * block.x >= its extent"
        )
    D = extent_z * extent_y * extent_x
    if D <= 0:
        return {"out": jnp.zeros((b, c, n), jnp.float16)}
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    d = jnp.arange(size, dtype=jnp.int32)
    i_x = _c_rem(d, extent_x, jnp.int32)
    q_x = _c_div(d, extent_x, jnp.int32)
    i_y = _c_rem(q_x, extent_y, jnp.int32)
    q_y = _c_div(q_x, extent_y, jnp.int32)
    i_z = q_y
    weight_in = _gather(weight, ((0 + (((i_z * n) * 3) + (i_x * 3))) + 0), size, lanes)
    idx_in = _gather(idx, ((0 + (((i_z * n) * 3) + (i_x * 3))) + 0), size, lanes)
    points_in = _take(
        points,
        ((0 + (((i_z * c) * m) + (i_y * m))) + idx_in.reshape(-1).astype(jnp.int32)),
        size,
        lanes,
    )
    weight_1_in = _gather(weight, ((0 + (((i_z * n) * 3) + (i_x * 3))) + 1), size, lanes)
    idx_1_in = _gather(idx, ((0 + (((i_z * n) * 3) + (i_x * 3))) + 1), size, lanes)
    points_1_in = _take(
        points,
        ((0 + (((i_z * c) * m) + (i_y * m))) + idx_1_in.reshape(-1).astype(jnp.int32)),
        size,
        lanes,
    )
    weight_2_in = _gather(weight, ((0 + (((i_z * n) * 3) + (i_x * 3))) + 2), size, lanes)
    idx_2_in = _gather(idx, ((0 + (((i_z * n) * 3) + (i_x * 3))) + 2), size, lanes)
    points_2_in = _take(
        points,
        ((0 + (((i_z * c) * m) + (i_y * m))) + idx_2_in.reshape(-1).astype(jnp.int32)),
        size,
        lanes,
    )
    ins = [
        weight_in,
        points_in,
        weight_1_in,
        points_1_in,
        weight_2_in,
        points_2_in,
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        _kernel,
        grid=(padded_rows // block_rows,),
        in_specs=[spec] * len(ins),
        out_specs=[spec] * 1,
        out_shape=[jax.ShapeDtypeStruct((padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_out = _unblock(outs[0], D, (b, c, n), jnp.float16)
    return {"out": r_out.reshape((b, c, n))}


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


def _f16(x):
    """x rounded to the nearest float16 (ties to even), kept in float32: half arithmetic rounds
    every result, and Mosaic has no float16 conversion, so the rounding is done on the bits."""
    x = jnp.asarray(x, jnp.float32)
    b = lax.bitcast_convert_type(x, jnp.int32)
    normal = lax.bitcast_convert_type((b + 0xFFF + ((b >> 13) & 1)) & -0x2000, jnp.float32)
    a = jnp.abs(x)
    v = jnp.minimum(a, 6.103515625e-05) * 16777216.0  # subnormal halves: multiples of 2**-24
    i = v.astype(jnp.int32)
    f = v - i.astype(jnp.float32)
    i = jnp.where(jnp.logical_or(f > 0.5, jnp.logical_and(f == 0.5, (i & 1) == 1)), i + 1, i)
    tiny = jnp.where(b < 0, -1.0, 1.0) * i.astype(jnp.float32) * 5.9604644775390625e-08
    out = jnp.where(a < 6.103515625e-05, tiny, normal)
    out = jnp.where(a >= 65520.0, jnp.where(x > 0, jnp.inf, -jnp.inf), out)
    return jnp.where(x != x, x, out)


def _take(a, idx, dp, lanes):
    """a's elements at idx (a gather by value); NaN where idx is outside a: a CUDA read there is
    undefined, so the draft poisons it rather than clamp to a neighbour."""
    flat = a.reshape(-1)
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    if flat.shape[0] == 0:
        return jnp.full((dp // lanes, lanes), jnp.nan, flat.dtype)
    inside = jnp.logical_and(idx >= 0, idx < flat.shape[0])
    got = jnp.take(flat, jnp.where(inside, idx, 0), mode="clip")  # in bounds: inside
    return jnp.where(inside, got, jnp.nan).astype(flat.dtype).reshape(dp // lanes, lanes)


def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)
