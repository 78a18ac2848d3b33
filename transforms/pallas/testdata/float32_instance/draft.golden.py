"""Pallas TPU draft of CUDA kernel reassemble_kernel (kernel.cu:9), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(feat_ref, mask_ref, out_ref, *, k, up, height, width):
    shape = out_ref.shape
    row = pl.program_id(0) * shape[0] + lax.broadcasted_iota(jnp.int32, shape, 0)
    d = row * shape[1] + lax.broadcasted_iota(jnp.int32, shape, 1)
    i_x = d
    acc = _cast(0, jnp.float32)
    for iy_step in range((1 + 2 * (_c_div((k - 1), 2, jnp.int32)))):
        for ix_step in range((1 + 2 * (_c_div((k - 1), 2, jnp.int32)))):
            m4 = jnp.logical_not(
                jnp.logical_or(
                    jnp.logical_or(
                        jnp.logical_or(
                            (
                                (
                                    (
                                        _c_div(
                                            _c_rem(
                                                _c_div(i_x, width, jnp.int32), height, jnp.int32
                                            ),
                                            up,
                                            jnp.int32,
                                        )
                                        - _c_div((k - 1), 2, jnp.int32)
                                    )
                                    + iy_step
                                )
                                < 0
                            ),
                            (
                                (
                                    (
                                        _c_div(
                                            _c_rem(
                                                _c_div(i_x, width, jnp.int32), height, jnp.int32
                                            ),
                                            up,
                                            jnp.int32,
                                        )
                                        - _c_div((k - 1), 2, jnp.int32)
                                    )
                                    + iy_step
                                )
                                >= _c_div(height, up, jnp.int32)
                            ),
                        ),
                        (
                            (
                                (
                                    _c_div(_c_rem(i_x, width, jnp.int32), up, jnp.int32)
                                    - _c_div((k - 1), 2, jnp.int32)
                                )
                                + ix_step
                            )
                            < 0
                        ),
                    ),
                    (
                        (
                            (
                                _c_div(_c_rem(i_x, width, jnp.int32), up, jnp.int32)
                                - _c_div((k - 1), 2, jnp.int32)
                            )
                            + ix_step
                        )
                        >= _c_div(width, up, jnp.int32)
                    ),
                )
            )
            feat = feat_ref[iy_step * (1 + 2 * (_c_div((k - 1), 2, jnp.int32))) + ix_step]
            mask = mask_ref[iy_step * (1 + 2 * (_c_div((k - 1), 2, jnp.int32))) + ix_step]
            v5 = jnp.where(m4, (acc + (feat * mask)), acc)
            acc = v5
    out_ref[...] = acc


def run(args, *, interpret):
    nthreads = args["nthreads"]
    feat = args["feat"]
    mask = args["mask"]
    k = args["k"]
    groups = args["groups"]
    up = int(args["up"])
    channels = args["channels"]
    height = args["height"]
    width = args["width"]
    n = feat.shape[0]
    c = int(channels)
    lh = feat.shape[2]
    lw = feat.shape[3]
    extent_x = nthreads
    D = extent_x
    if D <= 0:
        return {"out": jnp.zeros((n, c, (lh * up), (lw * up)), jnp.float32)}
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    d = jnp.arange(size, dtype=jnp.int32)
    i_x = d
    ins = [
        _gather_loop(
            feat,
            [
                (
                    0
                    + (
                        (
                            (
                                (
                                    (
                                        (
                                            _c_div(
                                                _c_div(
                                                    _c_div(i_x, width, jnp.int32), height, jnp.int32
                                                ),
                                                channels,
                                                jnp.int32,
                                            )
                                            * channels
                                        )
                                        + _c_rem(
                                            _c_div(
                                                _c_div(i_x, width, jnp.int32), height, jnp.int32
                                            ),
                                            channels,
                                            jnp.int32,
                                        )
                                    )
                                    * _c_div(height, up, jnp.int32)
                                )
                                + (
                                    (
                                        _c_div(
                                            _c_rem(
                                                _c_div(i_x, width, jnp.int32), height, jnp.int32
                                            ),
                                            up,
                                            jnp.int32,
                                        )
                                        - _c_div((k - 1), 2, jnp.int32)
                                    )
                                    + iy_step
                                )
                            )
                            * _c_div(width, up, jnp.int32)
                        )
                        + (
                            (
                                _c_div(_c_rem(i_x, width, jnp.int32), up, jnp.int32)
                                - _c_div((k - 1), 2, jnp.int32)
                            )
                            + ix_step
                        )
                    )
                )
                for iy_step in range((1 + 2 * (_c_div((k - 1), 2, jnp.int32))))
                for ix_step in range((1 + 2 * (_c_div((k - 1), 2, jnp.int32))))
            ],
            size,
            lanes,
        ),
        _gather_loop(
            mask,
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
                                                        _c_div(
                                                            _c_div(i_x, width, jnp.int32),
                                                            height,
                                                            jnp.int32,
                                                        ),
                                                        channels,
                                                        jnp.int32,
                                                    )
                                                    * k
                                                )
                                                * k
                                            )
                                            * groups
                                        )
                                        + (
                                            (
                                                (
                                                    (
                                                        _c_div(
                                                            _c_rem(
                                                                _c_div(
                                                                    _c_div(i_x, width, jnp.int32),
                                                                    height,
                                                                    jnp.int32,
                                                                ),
                                                                channels,
                                                                jnp.int32,
                                                            ),
                                                            _c_div(channels, groups, jnp.int32),
                                                            jnp.int32,
                                                        )
                                                        * k
                                                    )
                                                    + (
                                                        (
                                                            (
                                                                (
                                                                    _c_div(
                                                                        _c_rem(
                                                                            _c_div(
                                                                                i_x,
                                                                                width,
                                                                                jnp.int32,
                                                                            ),
                                                                            height,
                                                                            jnp.int32,
                                                                        ),
                                                                        up,
                                                                        jnp.int32,
                                                                    )
                                                                    - _c_div((k - 1), 2, jnp.int32)
                                                                )
                                                                + iy_step
                                                            )
                                                            - _c_div(
                                                                _c_rem(
                                                                    _c_div(i_x, width, jnp.int32),
                                                                    height,
                                                                    jnp.int32,
                                                                ),
                                                                up,
                                                                jnp.int32,
                                                            )
                                                        )
                                                        + _c_div((k - 1), 2, jnp.int32)
                                                    )
                                                )
                                                * k
                                            )
                                            + (
                                                (
                                                    (
                                                        (
                                                            _c_div(
                                                                _c_rem(i_x, width, jnp.int32),
                                                                up,
                                                                jnp.int32,
                                                            )
                                                            - _c_div((k - 1), 2, jnp.int32)
                                                        )
                                                        + ix_step
                                                    )
                                                    - _c_div(
                                                        _c_rem(i_x, width, jnp.int32), up, jnp.int32
                                                    )
                                                )
                                                + _c_div((k - 1), 2, jnp.int32)
                                            )
                                        )
                                    )
                                    * height
                                )
                                + _c_rem(_c_div(i_x, width, jnp.int32), height, jnp.int32)
                            )
                            * width
                        )
                        + _c_rem(i_x, width, jnp.int32)
                    )
                )
                for iy_step in range((1 + 2 * (_c_div((k - 1), 2, jnp.int32))))
                for ix_step in range((1 + 2 * (_c_div((k - 1), 2, jnp.int32))))
            ],
            size,
            lanes,
        ),
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        functools.partial(_kernel, k=k, up=up, height=height, width=width),
        grid=(padded_rows // block_rows,),
        in_specs=[
            pl.BlockSpec((ins[0].shape[0], block_rows, lanes), lambda i: (0, i, 0)),
            pl.BlockSpec((ins[1].shape[0], block_rows, lanes), lambda i: (0, i, 0)),
        ],
        out_specs=[spec] * 1,
        out_shape=[jax.ShapeDtypeStruct((padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_out = _unblock(outs[0], D, (n, c, (lh * up), (lw * up)), jnp.float32)
    return {"out": r_out.reshape((n, c, (lh * up), (lw * up)))}


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


def _gather_loop(a, idxs, dp, lanes):
    """a gathered at each iteration's indices: (iterations, dp // lanes, lanes)."""
    if not idxs:
        return jnp.zeros((1, dp // lanes, lanes), a.dtype)
    return jnp.stack([_gather(a, i, dp, lanes) for i in idxs])


def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)
