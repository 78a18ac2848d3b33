"""Pallas TPU draft of CUDA kernel tin_shift_kernel (kernel.cu:14), drafted by pallasify rules
(elementwise).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(shift_ref, input_ref, output_ref, output_out_ref, *, t_size):
    shift = shift_ref[...]
    output_out_ref[...] = output_ref[...]
    for i in range(t_size):
        v2 = i + shift
        c3 = jnp.logical_or((v2 < 0), (v2 >= t_size))
        m4 = jnp.logical_not(c3)
        input = input_ref[i]
        for slot in range(t_size):
            output_out_ref[slot] = jnp.where(
                jnp.logical_and(m4, (v2 == slot)), input, output_out_ref[slot]
            )


def run(args, *, interpret):
    nthreads = args["nthreads"]
    input = args["input"]
    shift = args["shift"]
    output = args["output"]
    batch_size = args["batch_size"]
    channels = args["channels"]
    t_size = args["t_size"]
    hw_size = args["hw_size"]
    group_size = args["group_size"]
    group_channel = args["group_channel"]
    n = int(batch_size)
    t = int(t_size)
    c = int(channels)
    hw = int(hw_size)
    extent_x = nthreads
    # threads repeat one another with this period: the first ones do all the work
    if (hw_size) > 0 and (channels) > 0 and (batch_size) > 0:
        extent_x = min(extent_x, (hw_size) * (channels) * (batch_size))
    D = extent_x
    if D <= 0:
        return {"output": output}
    lanes, block_rows, padded_rows = _layout(D, 8)
    size = padded_rows * lanes
    with jax.ensure_compile_time_eval(), jax.default_device(jax.devices("cpu")[0]):
        d = jnp.arange(size, dtype=jnp.int32)
        i_x = d
        dst_0 = _loop_dst(
            [
                (
                    (
                        _c_rem(
                            _c_div(_c_div(i_x, hw_size, jnp.int32), channels, jnp.int32),
                            batch_size,
                            jnp.int32,
                        )
                    )
                    * c
                    * hw
                    * t
                    + (_c_rem(_c_div(i_x, hw_size, jnp.int32), channels, jnp.int32)) * hw
                    + (_c_rem(i_x, hw_size, jnp.int32))
                    + (slot) * c * hw
                )
                for slot in range(t_size)
            ],
            [True for slot in range(t_size)],
            d,
            D,
            (n) * (t) * (c) * (hw),
        )
    ins = [
        _gather(
            shift,
            (
                0
                + (
                    (
                        _c_rem(
                            _c_div(_c_div(i_x, hw_size, jnp.int32), channels, jnp.int32),
                            batch_size,
                            jnp.int32,
                        )
                        * group_size
                    )
                    + _c_div(
                        _c_rem(_c_div(i_x, hw_size, jnp.int32), channels, jnp.int32),
                        group_channel,
                        jnp.int32,
                    )
                )
            ),
            size,
            lanes,
        ),
        _gather_loop(
            input,
            [
                (
                    0
                    + (
                        ((i * hw_size) * channels)
                        + (
                            (
                                (
                                    (
                                        (
                                            _c_rem(
                                                _c_div(
                                                    _c_div(i_x, hw_size, jnp.int32),
                                                    channels,
                                                    jnp.int32,
                                                ),
                                                batch_size,
                                                jnp.int32,
                                            )
                                            * t_size
                                        )
                                        * hw_size
                                    )
                                    * channels
                                )
                                + (
                                    hw_size
                                    * _c_rem(_c_div(i_x, hw_size, jnp.int32), channels, jnp.int32)
                                )
                            )
                            + _c_rem(i_x, hw_size, jnp.int32)
                        )
                    )
                )
                for i in range(t_size)
            ],
            size,
            lanes,
        ),
        _gather_loop(
            output,
            [
                (
                    (
                        _c_rem(
                            _c_div(_c_div(i_x, hw_size, jnp.int32), channels, jnp.int32),
                            batch_size,
                            jnp.int32,
                        )
                    )
                    * c
                    * hw
                    * t
                    + (_c_rem(_c_div(i_x, hw_size, jnp.int32), channels, jnp.int32)) * hw
                    + (_c_rem(i_x, hw_size, jnp.int32))
                    + (slot) * c * hw
                )
                for slot in range(t_size)
            ],
            size,
            lanes,
        ),
    ]
    spec = pl.BlockSpec((block_rows, lanes), lambda i: (i, 0))
    outs = pl.pallas_call(
        functools.partial(_kernel, t_size=t_size),
        grid=(padded_rows // block_rows,),
        in_specs=[
            spec,
            pl.BlockSpec((ins[1].shape[0], block_rows, lanes), lambda i: (0, i, 0)),
            pl.BlockSpec((ins[2].shape[0], block_rows, lanes), lambda i: (0, i, 0)),
        ],
        out_specs=[pl.BlockSpec((dst_0.shape[0], block_rows, lanes), lambda i: (0, i, 0))],
        out_shape=[jax.ShapeDtypeStruct((dst_0.shape[0], padded_rows, lanes), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(*ins)
    r_output = output.reshape(-1)
    r_output = _scatter_loop(r_output, dst_0, outs[0])
    return {"output": r_output.reshape((n, t, c, hw))}


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
