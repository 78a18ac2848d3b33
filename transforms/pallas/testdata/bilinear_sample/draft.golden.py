"""Pallas TPU draft of CUDA kernel sample_points_kernel (kernel.cu:39), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(
    anchors_ref,
    offsets_ref,
    anchors_1_ref,
    offsets_1_ref,
    input_ref,
    input_1_ref,
    input_2_ref,
    input_3_ref,
    out_ref,
    *,
    height,
    width,
):
    anchors = anchors_ref[...]
    offsets = offsets_ref[...]
    anchors_1 = anchors_1_ref[...]
    offsets_1 = offsets_1_ref[...]
    input = input_ref[...]
    input_1 = input_1_ref[...]
    input_2 = input_2_ref[...]
    input_3 = input_3_ref[...]
    v1 = anchors + offsets
    v2 = anchors_1 + offsets_1
    c3 = jnp.logical_or(
        jnp.logical_or(
            jnp.logical_or((v1 < jnp.float32(-1.0)), (v1 > _cast(height, jnp.float32))),
            (v2 < jnp.float32(-1.0)),
        ),
        (v2 > _cast(width, jnp.float32)),
    )
    c4 = v1 <= _cast(0, jnp.float32)
    v5 = jnp.where(c4, _cast(0, jnp.float32), v1)
    c6 = v2 <= _cast(0, jnp.float32)
    v7 = jnp.where(c6, _cast(0, jnp.float32), v2)
    v8 = _cast(v5, jnp.int32)
    v9 = _cast(v7, jnp.int32)
    c10 = v8 >= (height - 1)
    v12 = jnp.where(c10, _cast((height - 1), jnp.float32), v5)
    v14 = jnp.where(c10, (height - 1), v8)
    c15 = v9 >= (width - 1)
    v17 = jnp.where(c15, _cast((width - 1), jnp.float32), v7)
    v19 = jnp.where(c15, (width - 1), v9)
    v20 = v12 - _cast(v14, jnp.float32)
    v21 = v17 - _cast(v19, jnp.float32)
    v22 = jnp.float32(1.0) - v20
    v23 = jnp.float32(1.0) - v21
    r24 = jnp.where(
        c3,
        _cast(0, jnp.float32),
        (
            ((((v22 * v23) * input) + ((v22 * v21) * input_1)) + ((v20 * v23) * input_2))
            + ((v20 * v21) * input_3)
        ),
    )
    out_ref[...] = r24


def run(args, *, interpret):
    n = args["n"]
    input = args["input"]
    anchors = args["anchors"]
    offsets = args["offsets"]
    channels = args["channels"]
    height = args["height"]
    width = args["width"]
    np_ = anchors.shape[0]
    c = int(channels)
    extent_x = n
    D = extent_x
    if D <= 0:
        return {"out": jnp.zeros((np_, c), jnp.float32)}
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    d = jnp.arange(size, dtype=jnp.int32)
    i_x = d
    anchors_in = _gather(anchors, (0 + (2 * _c_div(i_x, channels, jnp.int32))), size, lanes)
    offsets_in = _gather(offsets, (0 + (2 * _c_div(i_x, channels, jnp.int32))), size, lanes)
    anchors_1_in = _gather(anchors, (0 + ((2 * _c_div(i_x, channels, jnp.int32)) + 1)), size, lanes)
    offsets_1_in = _gather(offsets, (0 + ((2 * _c_div(i_x, channels, jnp.int32)) + 1)), size, lanes)
    input_in = _take(
        input,
        (
            (0 + ((_c_rem(i_x, channels, jnp.int32) * height) * width))
            + (
                (
                    (
                        jnp.where(
                            (
                                (
                                    _cast(
                                        (
                                            jnp.where(
                                                (
                                                    (
                                                        anchors_in.reshape(-1).astype(jnp.float32)
                                                        + offsets_in.reshape(-1).astype(jnp.float32)
                                                    )
                                                    <= _cast(0, jnp.float32)
                                                ),
                                                _cast(0, jnp.float32),
                                                (
                                                    anchors_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_in.reshape(-1).astype(jnp.float32)
                                                ),
                                            )
                                        ),
                                        jnp.int32,
                                    )
                                )
                                >= (height - 1)
                            ),
                            (height - 1),
                            (
                                _cast(
                                    (
                                        jnp.where(
                                            (
                                                (
                                                    anchors_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_in.reshape(-1).astype(jnp.float32)
                                                )
                                                <= _cast(0, jnp.float32)
                                            ),
                                            _cast(0, jnp.float32),
                                            (
                                                anchors_in.reshape(-1).astype(jnp.float32)
                                                + offsets_in.reshape(-1).astype(jnp.float32)
                                            ),
                                        )
                                    ),
                                    jnp.int32,
                                )
                            ),
                        )
                    )
                    * width
                )
                + (
                    jnp.where(
                        (
                            (
                                _cast(
                                    (
                                        jnp.where(
                                            (
                                                (
                                                    anchors_1_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_1_in.reshape(-1).astype(jnp.float32)
                                                )
                                                <= _cast(0, jnp.float32)
                                            ),
                                            _cast(0, jnp.float32),
                                            (
                                                anchors_1_in.reshape(-1).astype(jnp.float32)
                                                + offsets_1_in.reshape(-1).astype(jnp.float32)
                                            ),
                                        )
                                    ),
                                    jnp.int32,
                                )
                            )
                            >= (width - 1)
                        ),
                        (width - 1),
                        (
                            _cast(
                                (
                                    jnp.where(
                                        (
                                            (
                                                anchors_1_in.reshape(-1).astype(jnp.float32)
                                                + offsets_1_in.reshape(-1).astype(jnp.float32)
                                            )
                                            <= _cast(0, jnp.float32)
                                        ),
                                        _cast(0, jnp.float32),
                                        (
                                            anchors_1_in.reshape(-1).astype(jnp.float32)
                                            + offsets_1_in.reshape(-1).astype(jnp.float32)
                                        ),
                                    )
                                ),
                                jnp.int32,
                            )
                        ),
                    )
                )
            )
        ),
        size,
        lanes,
    )
    input_1_in = _take(
        input,
        (
            (0 + ((_c_rem(i_x, channels, jnp.int32) * height) * width))
            + (
                (
                    (
                        jnp.where(
                            (
                                (
                                    _cast(
                                        (
                                            jnp.where(
                                                (
                                                    (
                                                        anchors_in.reshape(-1).astype(jnp.float32)
                                                        + offsets_in.reshape(-1).astype(jnp.float32)
                                                    )
                                                    <= _cast(0, jnp.float32)
                                                ),
                                                _cast(0, jnp.float32),
                                                (
                                                    anchors_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_in.reshape(-1).astype(jnp.float32)
                                                ),
                                            )
                                        ),
                                        jnp.int32,
                                    )
                                )
                                >= (height - 1)
                            ),
                            (height - 1),
                            (
                                _cast(
                                    (
                                        jnp.where(
                                            (
                                                (
                                                    anchors_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_in.reshape(-1).astype(jnp.float32)
                                                )
                                                <= _cast(0, jnp.float32)
                                            ),
                                            _cast(0, jnp.float32),
                                            (
                                                anchors_in.reshape(-1).astype(jnp.float32)
                                                + offsets_in.reshape(-1).astype(jnp.float32)
                                            ),
                                        )
                                    ),
                                    jnp.int32,
                                )
                            ),
                        )
                    )
                    * width
                )
                + (
                    jnp.where(
                        (
                            (
                                _cast(
                                    (
                                        jnp.where(
                                            (
                                                (
                                                    anchors_1_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_1_in.reshape(-1).astype(jnp.float32)
                                                )
                                                <= _cast(0, jnp.float32)
                                            ),
                                            _cast(0, jnp.float32),
                                            (
                                                anchors_1_in.reshape(-1).astype(jnp.float32)
                                                + offsets_1_in.reshape(-1).astype(jnp.float32)
                                            ),
                                        )
                                    ),
                                    jnp.int32,
                                )
                            )
                            >= (width - 1)
                        ),
                        (width - 1),
                        (
                            (
                                _cast(
                                    (
                                        jnp.where(
                                            (
                                                (
                                                    anchors_1_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_1_in.reshape(-1).astype(jnp.float32)
                                                )
                                                <= _cast(0, jnp.float32)
                                            ),
                                            _cast(0, jnp.float32),
                                            (
                                                anchors_1_in.reshape(-1).astype(jnp.float32)
                                                + offsets_1_in.reshape(-1).astype(jnp.float32)
                                            ),
                                        )
                                    ),
                                    jnp.int32,
                                )
                            )
                            + 1
                        ),
                    )
                )
            )
        ),
        size,
        lanes,
    )
    input_2_in = _take(
        input,
        (
            (0 + ((_c_rem(i_x, channels, jnp.int32) * height) * width))
            + (
                (
                    (
                        jnp.where(
                            (
                                (
                                    _cast(
                                        (
                                            jnp.where(
                                                (
                                                    (
                                                        anchors_in.reshape(-1).astype(jnp.float32)
                                                        + offsets_in.reshape(-1).astype(jnp.float32)
                                                    )
                                                    <= _cast(0, jnp.float32)
                                                ),
                                                _cast(0, jnp.float32),
                                                (
                                                    anchors_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_in.reshape(-1).astype(jnp.float32)
                                                ),
                                            )
                                        ),
                                        jnp.int32,
                                    )
                                )
                                >= (height - 1)
                            ),
                            (height - 1),
                            (
                                (
                                    _cast(
                                        (
                                            jnp.where(
                                                (
                                                    (
                                                        anchors_in.reshape(-1).astype(jnp.float32)
                                                        + offsets_in.reshape(-1).astype(jnp.float32)
                                                    )
                                                    <= _cast(0, jnp.float32)
                                                ),
                                                _cast(0, jnp.float32),
                                                (
                                                    anchors_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_in.reshape(-1).astype(jnp.float32)
                                                ),
                                            )
                                        ),
                                        jnp.int32,
                                    )
                                )
                                + 1
                            ),
                        )
                    )
                    * width
                )
                + (
                    jnp.where(
                        (
                            (
                                _cast(
                                    (
                                        jnp.where(
                                            (
                                                (
                                                    anchors_1_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_1_in.reshape(-1).astype(jnp.float32)
                                                )
                                                <= _cast(0, jnp.float32)
                                            ),
                                            _cast(0, jnp.float32),
                                            (
                                                anchors_1_in.reshape(-1).astype(jnp.float32)
                                                + offsets_1_in.reshape(-1).astype(jnp.float32)
                                            ),
                                        )
                                    ),
                                    jnp.int32,
                                )
                            )
                            >= (width - 1)
                        ),
                        (width - 1),
                        (
                            _cast(
                                (
                                    jnp.where(
                                        (
                                            (
                                                anchors_1_in.reshape(-1).astype(jnp.float32)
                                                + offsets_1_in.reshape(-1).astype(jnp.float32)
                                            )
                                            <= _cast(0, jnp.float32)
                                        ),
                                        _cast(0, jnp.float32),
                                        (
                                            anchors_1_in.reshape(-1).astype(jnp.float32)
                                            + offsets_1_in.reshape(-1).astype(jnp.float32)
                                        ),
                                    )
                                ),
                                jnp.int32,
                            )
                        ),
                    )
                )
            )
        ),
        size,
        lanes,
    )
    input_3_in = _take(
        input,
        (
            (0 + ((_c_rem(i_x, channels, jnp.int32) * height) * width))
            + (
                (
                    (
                        jnp.where(
                            (
                                (
                                    _cast(
                                        (
                                            jnp.where(
                                                (
                                                    (
                                                        anchors_in.reshape(-1).astype(jnp.float32)
                                                        + offsets_in.reshape(-1).astype(jnp.float32)
                                                    )
                                                    <= _cast(0, jnp.float32)
                                                ),
                                                _cast(0, jnp.float32),
                                                (
                                                    anchors_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_in.reshape(-1).astype(jnp.float32)
                                                ),
                                            )
                                        ),
                                        jnp.int32,
                                    )
                                )
                                >= (height - 1)
                            ),
                            (height - 1),
                            (
                                (
                                    _cast(
                                        (
                                            jnp.where(
                                                (
                                                    (
                                                        anchors_in.reshape(-1).astype(jnp.float32)
                                                        + offsets_in.reshape(-1).astype(jnp.float32)
                                                    )
                                                    <= _cast(0, jnp.float32)
                                                ),
                                                _cast(0, jnp.float32),
                                                (
                                                    anchors_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_in.reshape(-1).astype(jnp.float32)
                                                ),
                                            )
                                        ),
                                        jnp.int32,
                                    )
                                )
                                + 1
                            ),
                        )
                    )
                    * width
                )
                + (
                    jnp.where(
                        (
                            (
                                _cast(
                                    (
                                        jnp.where(
                                            (
                                                (
                                                    anchors_1_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_1_in.reshape(-1).astype(jnp.float32)
                                                )
                                                <= _cast(0, jnp.float32)
                                            ),
                                            _cast(0, jnp.float32),
                                            (
                                                anchors_1_in.reshape(-1).astype(jnp.float32)
                                                + offsets_1_in.reshape(-1).astype(jnp.float32)
                                            ),
                                        )
                                    ),
                                    jnp.int32,
                                )
                            )
                            >= (width - 1)
                        ),
                        (width - 1),
                        (
                            (
                                _cast(
                                    (
                                        jnp.where(
                                            (
                                                (
                                                    anchors_1_in.reshape(-1).astype(jnp.float32)
                                                    + offsets_1_in.reshape(-1).astype(jnp.float32)
                                                )
                                                <= _cast(0, jnp.float32)
                                            ),
                                            _cast(0, jnp.float32),
                                            (
                                                anchors_1_in.reshape(-1).astype(jnp.float32)
                                                + offsets_1_in.reshape(-1).astype(jnp.float32)
                                            ),
                                        )
                                    ),
                                    jnp.int32,
                                )
                            )
                            + 1
                        ),
                    )
                )
            )
        ),
        size,
        lanes,
    )
    ins = [
        anchors_in,
        offsets_in,
        anchors_1_in,
        offsets_1_in,
        input_in,
        input_1_in,
        input_2_in,
        input_3_in,
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        functools.partial(_kernel, height=height, width=width),
        grid=(padded_rows // block_rows,),
        in_specs=[spec] * len(ins),
        out_specs=[spec] * 1,
        out_shape=[jax.ShapeDtypeStruct((padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_out = _unblock(outs[0], D, (np_, c), jnp.float32)
    return {"out": r_out.reshape((np_, c))}


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
