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
        cols = _cols(
            [input.shape, output.shape, output.shape],
            [
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
                                        * _c_rem(
                                            _c_div(i_x, hw_size, jnp.int32), channels, jnp.int32
                                        )
                                    )
                                )
                                + _c_rem(i_x, hw_size, jnp.int32)
                            )
                        )
                    )
                    for i in range(t_size)
                ],
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
            ],
            [False, False, True],
            D,
            [shift.size],
        )
        ld0_cols = (
            None
            if cols is None
            else _cols_index(
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
                cols,
            )
        )
    if _form("cols", cols is not None, cols is not None):
        outs = pl.pallas_call(
            _cols_kernel(
                functools.partial(_kernel, t_size=t_size),
                (
                    True,
                    False,
                    False,
                ),
            ),
            grid=(cols[2][0], cols[2][2]),
            in_specs=[
                pl.BlockSpec(memory_space=pltpu.SMEM),
                _cols_spec(cols, False),
                _cols_spec(cols, True),
                _cols_spec(cols, True),
            ],
            out_specs=[_cols_spec(cols, True)],
            out_shape=[jax.ShapeDtypeStruct(cols[2], jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
            interpret=interpret,
        )(shift.reshape(-1), ld0_cols, _cols_view(input, cols), _cols_view(output, cols))
        return {"output": _cols_result(outs[0], cols, jnp.float32)}
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


def _numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


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


def _cols(shapes, accs, stores, n, tables):
    """The column form of a loop draft whose loop accesses (accs: per iteration, each thread's
    flat address, the first n threads real; stores: which write) all read or write arrays of
    one shape (shapes) at base + q * stride of one dim k: the thread's column along k. Where
    the base is the same for all, its threads are one each of the positions of the other dims,
    k is not one of the two dims XLA keeps minor (_vperm), a store writes every row of its
    column and each table (the elements of an array read at each thread's own index elsewhere)
    is at most 256, the kernel runs over the arrays' own layout: a block per position of the
    dims before k and between it and the minor two, k's rows whole. Returns that layout (the
    shape, _vperm's order, the view (lead, k, mid, rows, cols) and each thread's position in
    it without k), else None."""
    shape = tuple(shapes[0])
    if len(shape) < 3 or any(tuple(s) != shape for s in shapes) or any(t > 256 for t in tables):
        return None
    numel = _numel(shape)
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]

    def real(a):  # the first n threads' addresses
        a = jnp.asarray(a, jnp.int32).reshape(-1)
        return jnp.broadcast_to(a, (max(a.shape[0], n),))[:n]

    base = real(accs[0][0]) if accs[0] else None
    k = None
    for acc, store in zip(accs, stores, strict=True):
        if not acc or base is None:
            return None
        rows = [real(a) for a in acc]
        step = int(rows[1][0] - rows[0][0]) if len(rows) > 1 and n > 0 else None
        for q, r in enumerate(rows):
            if bool(jnp.any(r != base + q * (step or 0))):
                return None
        kk = [i for i in range(len(shape)) if shape[i] > 1 and strides[i] == step]
        if len(kk) != 1 or k not in (None, kk[0]):
            return None
        k = kk[0]
        if len(rows) > shape[k] or (store and len(rows) != shape[k]):
            return None
    perm = _vperm(shape)
    if k is None or k in perm[-2:] or n * shape[k] != numel:
        return None
    if bool(jnp.any(base < 0)) or bool(jnp.any(base >= numel)):
        return None
    at, rest = {}, base
    for i in reversed(range(len(shape))):
        at[i], rest = rest % shape[i], rest // shape[i]
    if bool(jnp.any(at[k] != 0)):
        return None
    pos = jnp.zeros_like(base)
    for i in perm:
        if i != k:
            pos = pos * shape[i] + at[i]
    if jnp.unique(pos).shape[0] != n:
        return None
    pk = perm.index(k)
    lead = _numel(shape[i] for i in perm[:pk])
    mid = _numel(shape[i] for i in perm[pk + 1 : -2])
    rows, cols = shape[perm[-2]], shape[perm[-1]]
    if len(accs) * shape[k] * _round_up(rows, 8) * _round_up(cols, 128) * 4 * 2 > 8 * 1024 * 1024:
        return None  # the blocks, double-buffered, past 8 MiB of VMEM
    return shape, perm, (lead, shape[k], mid, rows, cols), pos


def _cols_view(a, cols):
    """a in _cols' view (lead, k, mid, rows, cols): a bitcast of its HBM layout."""
    return a.transpose(cols[1]).reshape(cols[2])


def _cols_result(o, cols, dt):
    shape, perm, _, _ = cols
    o = o.reshape(tuple(shape[i] for i in perm))
    return o.transpose(tuple(perm.index(i) for i in range(len(perm)))).astype(dt)


def _cols_index(idx, cols):
    """Each thread's index (idx, the first threads real) at its place in _cols' view, without
    the k dim: (lead, mid, rows, cols)."""
    lead, _, mid, rows, cols_ = cols[2]
    pos = cols[3]
    idx = jnp.asarray(idx, jnp.int32).reshape(-1)
    idx = jnp.broadcast_to(idx, (max(idx.shape[0], pos.shape[0]),))[: pos.shape[0]]
    return jnp.zeros_like(pos).at[pos].set(idx).reshape(lead, mid, rows, cols_)


def _cols_spec(cols, looped):
    _, k, _, rows, cols_ = cols[2]
    if looped:
        return pl.BlockSpec((None, k, None, rows, cols_), lambda i, j: (i, 0, j, 0, 0))
    return pl.BlockSpec((None, None, rows, cols_), lambda i, j: (i, j, 0, 0))


def _cols_take(table_ref, idx_ref):
    """A table (SMEM) read at an index block: each position's element, the index clipped into
    the table (as the padded form's take); the kernel's whole load of that block (x[...] of the
    array is the array)."""
    idx = jnp.clip(idx_ref[...], 0, table_ref.shape[0] - 1)
    out = jnp.zeros(idx.shape, table_ref.dtype)
    for e in range(table_ref.shape[0]):
        out = jnp.where(idx == e, table_ref[e], out)
    return out


def _cols_kernel(kernel, takes):
    """kernel over _cols' blocks: each load takes[i] marks is its table and index refs, the
    kernel given the elements taken (_cols_take)."""

    def body(*refs):
        args, j = [], 0
        for t in takes:
            args.append(_cols_take(refs[j], refs[j + 1]) if t else refs[j])
            j += 2 if t else 1
        kernel(*args, *refs[j:])

    return body
