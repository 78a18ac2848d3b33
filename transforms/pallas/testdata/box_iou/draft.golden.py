"""Pallas TPU draft of CUDA kernel box_iou_kernel (kernel.cu:42), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel_aligned(
    boxes1_ref,
    boxes1_1_ref,
    boxes1_2_ref,
    boxes1_3_ref,
    boxes2_ref,
    boxes2_1_ref,
    boxes2_2_ref,
    boxes2_3_ref,
    ious_ref,
    *,
    mode,
    offset,
):
    boxes1 = boxes1_ref[...]
    boxes1_1 = boxes1_1_ref[...]
    boxes1_2 = boxes1_2_ref[...]
    boxes1_3 = boxes1_3_ref[...]
    boxes2 = boxes2_ref[...]
    boxes2_1 = boxes2_1_ref[...]
    boxes2_2 = boxes2_2_ref[...]
    boxes2_3 = boxes2_3_ref[...]
    v1 = ((boxes1_2 - boxes1) + _cast(offset, jnp.float32)) * (
        (boxes1_3 - boxes1_1) + _cast(offset, jnp.float32)
    )
    v2 = ((boxes2_2 - boxes2) + _cast(offset, jnp.float32)) * (
        (boxes2_3 - boxes2_1) + _cast(offset, jnp.float32)
    )
    v3 = jnp.fmax(
        ((jnp.fmin(boxes1_2, boxes2_2) - jnp.fmax(boxes1, boxes2)) + _cast(offset, jnp.float32)),
        jnp.float32(0.0),
    )
    v4 = jnp.fmax(
        (
            (jnp.fmin(boxes1_3, boxes2_3) - jnp.fmax(boxes1_1, boxes2_1))
            + _cast(offset, jnp.float32)
        ),
        jnp.float32(0.0),
    )
    v5 = v3 * v4
    ious_ref[...] = v5 / jnp.fmax(jnp.where((mode == 0), ((v1 + v2) - v5), v1), jnp.float32(offset))


def _run_aligned(args, *, interpret):
    boxes1 = args["boxes1"]
    boxes2 = args["boxes2"]
    n1_ = int(args["n1"])
    n2_ = int(args["n2"])
    mode = args["mode"]
    offset = args["offset"]
    extent_x = n1_
    D = extent_x
    if D <= 0:
        return {"ious": jnp.zeros((n1_, n2_), jnp.float32)}
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    d = jnp.arange(size, dtype=jnp.int32)
    i_x = d
    ins = [
        _gather(boxes1, (((0 + jnp.left_shift(i_x, 2)) + 0) + 0), size, lanes),
        _gather(boxes1, (((0 + jnp.left_shift(i_x, 2)) + 0) + 1), size, lanes),
        _gather(boxes1, (((0 + jnp.left_shift(i_x, 2)) + 0) + 2), size, lanes),
        _gather(boxes1, (((0 + jnp.left_shift(i_x, 2)) + 0) + 3), size, lanes),
        _gather(boxes2, (((0 + jnp.left_shift(i_x, 2)) + 0) + 0), size, lanes),
        _gather(boxes2, (((0 + jnp.left_shift(i_x, 2)) + 0) + 1), size, lanes),
        _gather(boxes2, (((0 + jnp.left_shift(i_x, 2)) + 0) + 2), size, lanes),
        _gather(boxes2, (((0 + jnp.left_shift(i_x, 2)) + 0) + 3), size, lanes),
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        functools.partial(_kernel_aligned, mode=mode, offset=offset),
        grid=(padded_rows // block_rows,),
        in_specs=[spec] * len(ins),
        out_specs=[spec] * 1,
        out_shape=[jax.ShapeDtypeStruct((padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_ious = jnp.zeros(((n1_) * (n2_),), jnp.float32)
    r_ious = _scatter(r_ious, (0 + i_x), True, outs[0], d, D)
    return {"ious": r_ious.reshape((n1_, n2_))}


def _kernel_not_aligned(
    boxes1_ref,
    boxes1_1_ref,
    boxes1_2_ref,
    boxes1_3_ref,
    boxes2_ref,
    boxes2_1_ref,
    boxes2_2_ref,
    boxes2_3_ref,
    ious_ref,
    *,
    mode,
    offset,
):
    boxes1 = boxes1_ref[...]
    boxes1_1 = boxes1_1_ref[...]
    boxes1_2 = boxes1_2_ref[...]
    boxes1_3 = boxes1_3_ref[...]
    boxes2 = boxes2_ref[...]
    boxes2_1 = boxes2_1_ref[...]
    boxes2_2 = boxes2_2_ref[...]
    boxes2_3 = boxes2_3_ref[...]
    v1 = ((boxes1_2 - boxes1) + _cast(offset, jnp.float32)) * (
        (boxes1_3 - boxes1_1) + _cast(offset, jnp.float32)
    )
    v2 = ((boxes2_2 - boxes2) + _cast(offset, jnp.float32)) * (
        (boxes2_3 - boxes2_1) + _cast(offset, jnp.float32)
    )
    v3 = jnp.fmax(
        ((jnp.fmin(boxes1_2, boxes2_2) - jnp.fmax(boxes1, boxes2)) + _cast(offset, jnp.float32)),
        jnp.float32(0.0),
    )
    v4 = jnp.fmax(
        (
            (jnp.fmin(boxes1_3, boxes2_3) - jnp.fmax(boxes1_1, boxes2_1))
            + _cast(offset, jnp.float32)
        ),
        jnp.float32(0.0),
    )
    v5 = v3 * v4
    ious_ref[...] = v5 / jnp.fmax(jnp.where((mode == 0), ((v1 + v2) - v5), v1), jnp.float32(offset))


def _run_not_aligned(args, *, interpret):
    boxes1 = args["boxes1"]
    boxes2 = args["boxes2"]
    n1_ = int(args["n1"])
    n2_ = int(args["n2"])
    mode = args["mode"]
    offset = args["offset"]
    extent_x = n1_ * n2_
    D = extent_x
    if D <= 0:
        return {"ious": jnp.zeros((n1_, n2_), jnp.float32)}
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    d = jnp.arange(size, dtype=jnp.int32)
    i_x = d
    ins = [
        _gather(
            boxes1, (((0 + jnp.left_shift(_c_div(i_x, n2_, jnp.int32), 2)) + 0) + 0), size, lanes
        ),
        _gather(
            boxes1, (((0 + jnp.left_shift(_c_div(i_x, n2_, jnp.int32), 2)) + 0) + 1), size, lanes
        ),
        _gather(
            boxes1, (((0 + jnp.left_shift(_c_div(i_x, n2_, jnp.int32), 2)) + 0) + 2), size, lanes
        ),
        _gather(
            boxes1, (((0 + jnp.left_shift(_c_div(i_x, n2_, jnp.int32), 2)) + 0) + 3), size, lanes
        ),
        _gather(
            boxes2, (((0 + jnp.left_shift(_c_rem(i_x, n2_, jnp.int32), 2)) + 0) + 0), size, lanes
        ),
        _gather(
            boxes2, (((0 + jnp.left_shift(_c_rem(i_x, n2_, jnp.int32), 2)) + 0) + 1), size, lanes
        ),
        _gather(
            boxes2, (((0 + jnp.left_shift(_c_rem(i_x, n2_, jnp.int32), 2)) + 0) + 2), size, lanes
        ),
        _gather(
            boxes2, (((0 + jnp.left_shift(_c_rem(i_x, n2_, jnp.int32), 2)) + 0) + 3), size, lanes
        ),
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        functools.partial(_kernel_not_aligned, mode=mode, offset=offset),
        grid=(padded_rows // block_rows,),
        in_specs=[spec] * len(ins),
        out_specs=[spec] * 1,
        out_shape=[jax.ShapeDtypeStruct((padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_ious = _unblock(outs[0], D, (n1_, n2_), jnp.float32)
    return {"ious": r_ious.reshape((n1_, n2_))}


def run(args, *, interpret):
    if args["aligned"]:
        return _run_aligned(args, interpret=interpret)
    return _run_not_aligned(args, interpret=interpret)


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


def _gather(a, idx, dp, lanes):
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    return jnp.take(a.reshape(-1), idx, mode="clip").reshape(dp // lanes, lanes)


def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)


def _scatter(base, idx, mask, o, d, n):
    dp = d.shape[0]
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    keep = jnp.logical_and(jnp.broadcast_to(jnp.asarray(mask), (dp,)), d < n)
    dst = jnp.where(keep, idx, base.shape[0])
    return base.at[dst].set(o.reshape(-1).astype(base.dtype), mode="drop")
