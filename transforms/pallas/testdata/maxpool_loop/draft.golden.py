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
        input_layout = _plane_layout(
            input.shape,
            [
                (
                    channels,
                    (_c_div((ih - k), s, jnp.int32) + 1),
                    (_c_div((iw - k), s, jnp.int32) + 1),
                )
            ],
            (extent_z, extent_y, extent_x),
            True,
        )
        outs = pl.pallas_call(
            _plane_kernel(
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
                input_layout,
            ),
            grid=_plane_grid(input_layout, extent_z)[0],
            in_specs=[_plane_spec(input_layout, 0, input.shape[-2:])],
            out_specs=[_plane_spec(input_layout, 1, (extent_y, extent_x))],
            out_shape=[_plane_struct(input_layout, 1, (extent_z, extent_y, extent_x), jnp.float32)],
            scratch_shapes=_plane_scratch(input.shape[-2:], extent_y, input.dtype),
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=_plane_grid(input_layout, extent_z)[1]
            ),
            interpret=interpret,
        )(_plane_array(input, input_layout))
        return {
            "output": _plane_result(
                outs[0],
                input_layout,
                1,
                (
                    channels,
                    (_c_div((ih - k), s, jnp.int32) + 1),
                    (_c_div((iw - k), s, jnp.int32) + 1),
                ),
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


_FORCE = None  # set by the validator only (pallasify_harness); None when a user imports it


def _form(name, natural, applies=True):
    """Whether run() takes the first of the two forms of decision name (the helper that decides):
    natural, the choice of the shapes, unless the validator, to prove both, forces one through
    _FORCE (the first only where it applies)."""
    return natural if _FORCE is None else _FORCE(name, natural, applies)


def _column_major(rows, cols):
    """Whether XLA keeps a (rows, cols) array of 32- or 16-bit values column-major on a TPU:
    the (8, 128)-tiled layout that pads it less, row-major on a tie (libtpu 0.0.52: v5e, v6e,
    TPU7x). Only the traffic depends on it; the kernel then runs over the transposes."""
    by_rows = pl.cdiv(rows, 8) * 8 * pl.cdiv(cols, 128) * 128
    by_cols = pl.cdiv(cols, 8) * 8 * pl.cdiv(rows, 128) * 128
    return _form("column_major", by_cols < by_rows)


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
    fits = 4 * (3 * tile + cols + 2 * pl.cdiv(ey, 8) * 8 * pl.cdiv(ex, 128) * 128) <= 8 * 2**20
    return (sy, sx, offs) if _form("plane", fits) else None


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


def _vperm(shape):
    """The order (major to minor) in which XLA lays out an array of shape, of 32- or 16-bit
    elements, on a TPU (libtpu 0.0.52; 2-D: _column_major; more dimensions: the pair of minor
    dimensions that pads the array least in (8, 128) tiles, fewer rows for a short one, on a
    tie the later dimensions, the rest in order; 20 shapes of 3 dimensions measured on v6e)."""
    if len(shape) == 2:
        return (1, 0) if _column_major(*shape) else (0, 1)
    best = None
    for minor in range(len(shape)):
        for second in range(len(shape)):
            if second == minor:
                continue
            rows = min(8, 1 << (shape[second] - 1).bit_length())
            size = _round_up(shape[second], rows) * _round_up(shape[minor], 128)
            for i, s in enumerate(shape):
                size *= 1 if i in (minor, second) else s
            if best is None or size <= best[0]:
                best = (size, minor, second)
    _, minor, second = best
    order = tuple(i for i in range(len(shape)) if i not in (minor, second)) + (second, minor)
    if order != tuple(range(len(shape))) and not _form("vperm", True):
        return tuple(range(len(shape)))  # row-major
    return order


def _plane_view(shape, plane):
    """The order (major to minor) of the (planes, rows, cols) view of an array whose last two dims
    are plane (a window load's source, an output of the plane form) in which XLA keeps it (_vperm):
    the planes major, rows and cols in either order, or, for a 3-D array, the planes' index between
    the other two. The form reads and writes the array in that order, a bitcast of its HBM layout;
    any other layout (the planes' index minor) is read and written row-major, relaid out by XLA."""
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2 or shape[-2:] != tuple(int(s) for s in plane):
        return (0, 1, 2)
    perm, n = _vperm(shape), len(shape)
    if perm[-2:] == (n - 1, n - 2):
        return (0, 2, 1)
    if n == 3 and perm in ((1, 0, 2), (2, 0, 1)):
        return perm
    return (0, 1, 2)


def _plane_layout(shape, oshapes, ext, zfree):
    """The plane form's layout, (zb, orders): the _plane_view order of the window load's array
    (first) and of each output; zb planes per grid step, one unless an array keeps the planes'
    index in its second-minor dim (then 8 planes a block, or all of them). The kernel runs once per
    plane of a block, so zb > 1 needs a kernel that reads no coordinate but x and y (zfree), at
    most 64 planes and blocks within the VMEM budget; otherwise such arrays are read and written
    row-major."""
    ez, ey, ex = (int(e) for e in ext)
    h, w = int(shape[-2]), int(shape[-1])
    orders = [_plane_view(shape, (h, w))] + [_plane_view(s, (ey, ex)) for s in oshapes]
    if all(o[0] == 0 for o in orders):
        return 1, orders
    zb = 8 if ez % 8 == 0 else ez
    words = pl.cdiv(h, 8) * 8 * pl.cdiv(w, 128) * 128 + pl.cdiv(ey, 128) * 128 * pl.cdiv(w, 8) * 8
    for o, dims in zip(orders, [(zb, h, w)] + [(zb, ey, ex)] * len(oshapes), strict=True):
        b = [dims[i] for i in o]
        words += 2 * b[0] * pl.cdiv(b[1], 8) * 8 * pl.cdiv(b[2], 128) * 128
    if zfree and zb <= 64 and 4 * words <= 8 * 2**20:
        return zb, orders
    return 1, [(0, 1, 2) if o[0] else o for o in orders]


def _plane_array(a, layout):
    """The window load's array as the plane form's operand: its (planes, rows, cols) view in its
    _plane_layout order (a bitcast of its HBM layout)."""
    return a.reshape(-1, *a.shape[-2:]).transpose(layout[1][0])


def _plane_spec(layout, i, plane):
    """The block spec of array i of _plane_layout (0 the load's, then the outputs): zb planes of
    the (rows, cols) plane, in its order."""
    zb, orders = layout
    z = orders[i].index(0)
    block = tuple((zb, *plane)[k] for k in orders[i])
    return pl.BlockSpec(block, lambda g, *_: tuple(g if k == z else 0 for k in range(3)))


def _plane_struct(layout, i, ext, dt):
    """Output i of _plane_layout (1 the first) over the domain ext = (ez, ey, ex), in its order."""
    return jax.ShapeDtypeStruct(tuple(ext[k] for k in layout[1][i]), dt)


def _plane_result(o, layout, i, shape):
    """Output i of _plane_layout as the array of shape."""
    order = layout[1][i]
    return o.transpose([order.index(k) for k in range(3)]).reshape(shape)


def _plane_ref(ref, order, z):
    """Plane z of a block in its _plane_layout order as the kernel reads and writes a plane's
    block: ref[...], ref[...] = v, ref.shape (rows, cols)."""
    mid, trans = order[1] == 0, order.index(1) > order.index(2)

    class PlaneRef:
        shape = (ref.shape[order.index(1)], ref.shape[order.index(2)])

        def __getitem__(self, idx):
            v = ref[:, z, :] if mid else ref[z]
            return v.T if trans else v

        def __setitem__(self, idx, v):
            v = v.T if trans else v
            if mid:
                ref[:, z, :] = v
            else:
                ref[z] = v

    return PlaneRef()


def _plane_kernel(kernel, layout):
    """kernel over one plane of a block of _plane_layout's zb planes, the plane the grid's second
    index (the block stays in VMEM across it, read and written back once); the load's and the
    outputs' refs that plane's _plane_ref, the scratch buffers the kernel's own."""
    zb, orders = layout

    def body(*refs):
        n = len(orders)
        z = pl.program_id(1) if zb > 1 else 0
        kernel(*(_plane_ref(r, o, z) for r, o in zip(refs[:n], orders, strict=True)), *refs[n:])

    return body


def _plane_grid(layout, ez):
    """The plane form's grid over ez planes and its dimension semantics: a step per plane, the
    blocks of _plane_layout's zb planes first (parallel), then the plane in its block."""
    zb = layout[0]
    if zb == 1:
        return (ez,), ("parallel",)
    return (ez // zb, zb), ("parallel", "arbitrary")


def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)
