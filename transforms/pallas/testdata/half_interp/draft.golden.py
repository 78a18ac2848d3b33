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
    weight = _h2f(weight_ref[...])
    points = _h2f(points_ref[...])
    weight_1 = _h2f(weight_1_ref[...])
    points_1 = _h2f(points_1_ref[...])
    weight_2 = _h2f(weight_2_ref[...])
    points_2 = _h2f(points_2_ref[...])
    out_ref[...] = _f2h(
        _f16(_f16(weight * points) + _f16(weight_1 * points_1)) + _f16(weight_2 * points_2)
    )


def run(args, *, interpret):
    b = int(args["b"])
    c = int(args["c"])
    m = args["m"]
    n = int(args["n"])
    points = args["points"]
    idx = args["idx"]
    weight = args["weight"]
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
    lanes, block_rows, padded_rows = _layout(D, 16)
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
        _f16_bits(weight_in),
        _f16_bits(points_in),
        _f16_bits(weight_1_in),
        _f16_bits(points_1_in),
        _f16_bits(weight_2_in),
        _f16_bits(points_2_in),
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        _kernel,
        grid=(padded_rows // block_rows,),
        in_specs=[spec] * len(ins),
        out_specs=[spec] * 1,
        out_shape=[jax.ShapeDtypeStruct((padded_rows, lanes), jnp.int16)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_out = _unblock(_bits_f16(outs[0]), D, (b, c, n), jnp.float16)
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


def _h2f(h):
    """The float32 value of float16 bits h (int16, as a kernel loads a float16 array), decoded
    exactly with integer ops: sign, exponent, mantissa, subnormals, inf and NaN."""
    h = h.astype(jnp.int32)
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    normal = ((e + 112) << 23) | (m << 13)
    special = 0x7F800000 | (m << 13)  # inf, NaN
    tiny = lax.bitcast_convert_type(m.astype(jnp.float32) * 5.9604644775390625e-08, jnp.int32)
    bits = jnp.where(e == 0, tiny, jnp.where(e == 0x1F, special, normal))
    return lax.bitcast_convert_type(bits | jnp.where(h < 0, -0x80000000, 0), jnp.float32)


def _f2h(x):
    """The float16 bits (int16) of float32 x rounded as __float2half rounds: to nearest, ties
    to even, overflow to inf, subnormal halves kept, NaN a NaN; with integer ops."""
    b = lax.bitcast_convert_type(jnp.asarray(x, jnp.float32), jnp.int32)
    a = b & 0x7FFFFFFF
    normal = (a - 0x38000000 + 0xFFF + ((a >> 13) & 1)) >> 13
    shift = jnp.clip(126 - (a >> 23), 14, 31)  # below 2**-14: 2**-24 units of the mantissa
    mant = (a & 0x7FFFFF) | 0x800000
    low = mant & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    q = mant >> shift
    up = jnp.logical_or(low > half, jnp.logical_and(low == half, (q & 1) == 1))
    tiny = q + up.astype(jnp.int32)
    h = jnp.where(a < 0x38800000, tiny, jnp.minimum(normal, 0x7C00))
    h = jnp.where(a > 0x7F800000, 0x7E00, h)
    return jnp.where(b < 0, h - 0x8000, h).astype(jnp.int16)


def _f16(x):
    """x rounded to float16 as __float2half rounds it, kept in float32: half arithmetic rounds
    every result."""
    return _h2f(_f2h(x))


def _f16_bits(a):
    """A float16 array as its int16 bits, the form a kernel loads and stores (Mosaic has no
    float16 refs on v5e, v6e or TPU7x); an input's view is fused into the kernel."""
    return lax.bitcast_convert_type(a, jnp.int16)


def _bits_f16(b):
    """The float16 array whose bits a kernel stored."""
    return lax.bitcast_convert_type(b, jnp.float16)


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
