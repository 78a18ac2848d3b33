"""Pallas TPU draft of CUDA kernel window_collect_kernel (kernel.cu:11), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(mask_data_ref, buffer_data_ref, *, h_mask, w_mask):
    for hidx in range(h_mask):
        for widx in range(w_mask):
            mask_data = mask_data_ref[hidx * w_mask + widx]
            buffer_data_ref[hidx * w_mask + widx] = mask_data


def run(args, *, interpret):
    nthreads = args["nthreads"]
    h_feature = args["h_feature"]
    w_feature = args["w_feature"]
    h_mask = args["h_mask"]
    w_mask = args["w_mask"]
    half_h_mask = args["half_h_mask"]
    half_w_mask = args["half_w_mask"]
    mask_data = args["mask_data"]
    buffer_data = args["buffer_data"]
    num = mask_data.shape[0]
    hf = int(h_feature)
    wf = int(w_feature)
    extent_x = nthreads
    D = extent_x
    if D <= 0:
        return {"buffer_data": buffer_data}
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    with jax.ensure_compile_time_eval(), jax.default_device(jax.devices("cpu")[0]):
        d = jnp.arange(size, dtype=jnp.int32)
        i_x = d
        dst_0 = _loop_dst(
            [
                (
                    0
                    + (
                        (
                            (
                                (
                                    (
                                        (
                                            (
                                                (
                                                    _c_div(
                                                        _c_div(i_x, w_feature, jnp.int32),
                                                        h_feature,
                                                        jnp.int32,
                                                    )
                                                    * h_feature
                                                )
                                                * w_feature
                                            )
                                            + (
                                                (
                                                    (
                                                        hidx
                                                        + _c_rem(
                                                            _c_div(i_x, w_feature, jnp.int32),
                                                            h_feature,
                                                            jnp.int32,
                                                        )
                                                    )
                                                    - half_h_mask
                                                )
                                                * w_feature
                                            )
                                        )
                                        + ((widx + _c_rem(i_x, w_feature, jnp.int32)) - half_w_mask)
                                    )
                                    * h_feature
                                )
                                * w_feature
                            )
                            + (
                                _c_rem(_c_div(i_x, w_feature, jnp.int32), h_feature, jnp.int32)
                                * w_feature
                            )
                        )
                        + _c_rem(i_x, w_feature, jnp.int32)
                    )
                )
                for hidx in range(h_mask)
                for widx in range(w_mask)
            ],
            [
                jnp.logical_and(
                    jnp.logical_and(
                        (
                            hidx
                            >= jnp.maximum(
                                0,
                                (
                                    half_h_mask
                                    - _c_rem(
                                        _c_div(i_x, w_feature, jnp.int32), h_feature, jnp.int32
                                    )
                                ),
                            )
                        ),
                        (
                            hidx
                            < jnp.minimum(
                                h_mask,
                                (
                                    (h_feature + half_h_mask)
                                    - _c_rem(
                                        _c_div(i_x, w_feature, jnp.int32), h_feature, jnp.int32
                                    )
                                ),
                            )
                        ),
                    ),
                    jnp.logical_and(
                        (widx >= jnp.maximum(0, (half_w_mask - _c_rem(i_x, w_feature, jnp.int32)))),
                        (
                            widx
                            < jnp.minimum(
                                w_mask,
                                ((w_feature + half_w_mask) - _c_rem(i_x, w_feature, jnp.int32)),
                            )
                        ),
                    ),
                )
                for hidx in range(h_mask)
                for widx in range(w_mask)
            ],
            d,
            D,
            (num) * (hf * wf) * (hf) * (wf),
        )
    ins = [
        _gather_loop(
            mask_data,
            [
                (
                    0
                    + (
                        (
                            (
                                (
                                    (
                                        (
                                            (
                                                (
                                                    _c_div(
                                                        _c_div(i_x, w_feature, jnp.int32),
                                                        h_feature,
                                                        jnp.int32,
                                                    )
                                                    * h_mask
                                                )
                                                * w_mask
                                            )
                                            + (hidx * w_mask)
                                        )
                                        + widx
                                    )
                                    * h_feature
                                )
                                + _c_rem(_c_div(i_x, w_feature, jnp.int32), h_feature, jnp.int32)
                            )
                            * w_feature
                        )
                        + _c_rem(i_x, w_feature, jnp.int32)
                    )
                )
                for hidx in range(h_mask)
                for widx in range(w_mask)
            ],
            size,
            lanes,
        ),
    ]
    outs = pl.pallas_call(
        functools.partial(_kernel, h_mask=h_mask, w_mask=w_mask),
        grid=(padded_rows // block_rows,),
        in_specs=[pl.BlockSpec((ins[0].shape[0], block_rows, lanes), lambda i: (0, i, 0))],
        out_specs=[pl.BlockSpec((dst_0.shape[0], block_rows, lanes), lambda i: (0, i, 0))],
        out_shape=[jax.ShapeDtypeStruct((dst_0.shape[0], padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_buffer_data = buffer_data.reshape(-1)
    r_buffer_data = _scatter_loop(r_buffer_data, dst_0, outs[0])
    return {"buffer_data": r_buffer_data.reshape((num, (hf * wf), hf, wf))}


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


def _loop_dst(idxs, masks, d, n, size):
    """Flat destinations of a loop's store, one row per iteration (size where
    the thread does not write). They depend on sizes only: checked here, while
    tracing, that no two writes overlap (their order would matter) and that
    every write is inside the array."""
    dp = d.shape[0]
    rows = []
    for idx, mask in zip(idxs, masks, strict=True):
        idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
        keep = jnp.logical_and(jnp.broadcast_to(jnp.asarray(mask), (dp,)), d < n)
        rows.append(jnp.where(keep, idx, size))
    if not rows:
        return jnp.full((1, dp), size, jnp.int32)
    dst = jnp.stack(rows)
    hit = dst[dst != size]
    if bool(jnp.any(hit < 0)) or bool(jnp.any(hit > size)):
        raise ValueError("a loop's store writes outside its array at these sizes")
    if jnp.unique(hit).shape[0] != hit.shape[0]:
        raise ValueError("a loop's stores overlap at these sizes: the draft does not cover them")
    return dst


def _scatter_loop(base, dst, o):
    return base.at[dst.reshape(-1)].set(o.reshape(-1).astype(base.dtype), mode="drop")
