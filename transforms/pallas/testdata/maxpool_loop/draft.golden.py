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
    *scratch,
    input_height,
    input_width,
    pool_height,
    pool_width,
    stride,
    extent_y,
    extent_x,
    input_plane,
):
    shape = output_ref.shape
    row = pl.program_id(0) * shape[0] + lax.broadcasted_iota(jnp.int32, shape, 0)
    d = row * shape[1] + lax.broadcasted_iota(jnp.int32, shape, 1)
    input_held = _plane_stage(input_ref, scratch, input_plane)
    i_x = _c_rem(d, extent_x, jnp.int32)
    q_x = _c_div(d, extent_x, jnp.int32)
    i_y = _c_rem(q_x, extent_y, jnp.int32)
    max_val = -jnp.float32(3.4028234663852886e38)
    for h in range(pool_height):
        for w in range(pool_width):
            input, input_held = _window_read(
                input_ref, scratch, input_plane, h * pool_width + w, shape, input_held
            )
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

    def _plane_addresses(d):
        i_x = _c_rem(d, extent_x, jnp.int32)
        q_x = _c_div(d, extent_x, jnp.int32)
        i_y = _c_rem(q_x, extent_y, jnp.int32)
        q_y = _c_div(q_x, extent_y, jnp.int32)
        i_z = q_y
        return [
            (
                0
                + (
                    (((i_z * input_height) * input_width) + (((i_y * stride) + h) * input_width))
                    + ((i_x * stride) + w)
                )
            )
            for h in range(pool_height)
            for w in range(pool_width)
        ]

    input_plane = _plane(
        input.shape,
        [_plane_addresses(v) for v in (0, 1, extent_x, extent_x * extent_y)],
        (extent_z, extent_y, extent_x),
    )
    if input_plane is not None:
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
                input_plane=input_plane,
            ),
            grid=(extent_z,),
            in_specs=[pl.BlockSpec((None, *input.shape[-2:]), lambda i: (i, 0, 0))],
            out_specs=[pl.BlockSpec((None, extent_y, extent_x), lambda i: (i, 0, 0))] * 1,
            out_shape=[jax.ShapeDtypeStruct((extent_z, extent_y, extent_x), jnp.float32)],
            scratch_shapes=_plane_scratch(input.shape[-2:], extent_y, input.dtype),
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
            interpret=interpret,
        )(input.reshape(-1, *input.shape[-2:]))
        return {
            "output": outs[0].reshape(
                (
                    channels,
                    (_c_div((ih - k), s, jnp.int32) + 1),
                    (_c_div((iw - k), s, jnp.int32) + 1),
                )
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
            input_plane=input_plane,
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


def _plane(shape, addrs, ext):
    """How a window load reads its source from VMEM, (sy, sx, offsets), or None (it is then
    gathered per iteration): addrs are its addresses at the domain's first element and one step
    along x, y and z; the form applies when the address at iteration k is z * H * W + (sy * y +
    r_k) * W + sx * x + c_k over the domain ext = (ez, ey, ex), (H, W) the array's last two dims,
    every read inside its plane and the plane's buffers within the VMEM budget."""
    if len(shape) < 2 or not addrs[0]:
        return None
    h, w = int(shape[-2]), int(shape[-1])
    ez, ey, ex = ext
    a0, ax, ay, az = ([int(a) for a in v] for v in addrs)
    planes = 1
    for s in shape[:-2]:
        planes *= int(s)
    sx = ax[0] - a0[0] if ex > 1 else 1
    sy, ry = divmod(ay[0] - a0[0], w) if ey > 1 else (1, 0)
    if ry or sx < 1 or sy < 1 or ez > planes or (ez > 1 and az[0] - a0[0] != h * w):
        return None
    offs = tuple(divmod(a, w) for a in a0)
    if any(
        a < 0 or r + sy * (ey - 1) >= h or c + sx * (ex - 1) >= w
        for a, (r, c) in zip(a0, offs, strict=True)
    ):
        return None
    tile = pl.cdiv(h, 8) * 8 * pl.cdiv(w, 128) * 128
    cols = pl.cdiv(ey, 128) * 128 * pl.cdiv(w, 8) * 8
    if 4 * (3 * tile + cols + 2 * pl.cdiv(ey, 8) * 8 * pl.cdiv(ex, 128) * 128) > 8 * 2**20:
        return None
    return sy, sx, offs


def _plane_scratch(plane, ey, dt):
    """_window_read's buffers: the plane's 128-lane chunks, the window rows' transpose's."""
    h, w = (int(n) for n in plane)
    return [pltpu.VMEM((pl.cdiv(w, 128), h, 128), dt), pltpu.VMEM((pl.cdiv(ey, 128), w, 128), dt)]


def _lane_chunks(buf, v):
    """Stores v's 128-lane chunks into buf (chunks, rows, 128)."""
    for j in range(buf.shape[0]):
        w = min(128, v.shape[1] - j * 128)
        buf[j, : v.shape[0], :w] = v[:, j * 128 : j * 128 + w]


def _strided_rows(buf, start, n, stride, width):
    """Rows start, start + stride, ... (n of them) of the (rows, width) value whose 128-lane chunks
    buf holds (a strided load needs a buffer whose last dim is 128)."""
    parts = []
    for j in range(buf.shape[0]):
        w = min(128, width - j * 128)
        parts.append(buf.at[j][pl.ds(start, n, stride=stride), :][:, :w])
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=1)


def _plane_stage(ref, scratch, plane):
    """Copies a window load's plane into 128-lane chunks (plane not None); no rows held yet."""
    if plane is not None:
        _lane_chunks(scratch[0], ref[...])
    return None


def _window_read(ref, scratch, plane, it, shape, held):
    """A window load's values at iteration it and the row offset whose window rows scratch[1]
    now holds: its block of the per-iteration gather (plane None), else rows r + sy * y and
    columns c + sx * x of its plane in VMEM. The window rows of a row offset are loaded from the
    plane's chunks (a sublane-strided load) and their transpose stored once; an iteration's
    columns are a strided load of the transpose's rows. The kernel's loops are unrolled when
    traced, so held is the last row offset read."""
    if plane is None:
        return ref[it], held
    sy, sx, offs = plane
    r, c = offs[it]
    ey, ex = shape
    if held != r:
        _lane_chunks(scratch[1], _strided_rows(scratch[0], r, ey, sy, ref.shape[-1]).T)
    return _strided_rows(scratch[1], c, ex, sx, ey).T, r


def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)
