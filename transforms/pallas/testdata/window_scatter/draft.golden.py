"""Pallas TPU draft of CUDA kernel window_collect_kernel (kernel.cu:11), drafted by pallasify rules
(elementwise).
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
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
        lsel = _lsel(
            [mask_data.shape],
            [
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
                                    + _c_rem(
                                        _c_div(i_x, w_feature, jnp.int32), h_feature, jnp.int32
                                    )
                                )
                                * w_feature
                            )
                            + _c_rem(i_x, w_feature, jnp.int32)
                        )
                    )
                    for hidx in range(h_mask)
                    for widx in range(w_mask)
                ]
            ],
            [buffer_data.shape],
            [dst_0],
            D,
        )
    if _form("lsel", lsel is not None, lsel is not None):
        ins, in_specs = _lsel_ins(lsel, [mask_data], [buffer_data])
        outs = pl.pallas_call(
            _lsel_kernel(functools.partial(_kernel, h_mask=h_mask, w_mask=w_mask), 1),
            grid=(lsel[1],),
            in_specs=in_specs,
            out_specs=[_lsel_spec(lsel, buffer_data)],
            out_shape=[jax.ShapeDtypeStruct(_lsel_shape(lsel, buffer_data), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
            interpret=interpret,
        )(*ins)
        return {"buffer_data": _lsel_result(outs[0], lsel, buffer_data.shape, jnp.float32)}
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


def _lsel(lshapes, laccs, sshapes, sdsts, n):
    """The lane-select form of a loop draft whose loads (laccs: per iteration, each thread's flat
    address, the first n threads real) read arrays at base + q * stride of one dim k and whose
    stores write, per iteration, where their destinations say (sdsts: _loop_dst's, the array's
    size where the thread does not write) along k in the thread's own place. Where the arrays
    are of one shape but along k, XLA keeps them alike (_vperm) with k minor, each load's base
    is at k = 0 and the same for all, one thread each, and every write is at the thread's own
    place, the kernel runs over the arrays' own layout (lead, rows, k): a block per lead
    position, the thread's run of k the lanes of its row. Returns (the order, the lead blocks,
    the rows, each store's row table (lead, rows, iterations): the lane iteration q writes, -1
    where none, and its period in lead blocks), else None."""
    if not lshapes or n <= 0:
        return None
    shapes = [tuple(s) for s in list(lshapes) + list(sshapes)]
    nd = len(shapes[0])
    if nd < 3 or any(len(s) != nd for s in shapes):
        return None
    perm = _vperm(shapes[0])
    k = perm[-1]
    rest = shapes[0][:k] + shapes[0][k + 1 :]
    if any(_vperm(s) != perm or s[:k] + s[k + 1 :] != rest for s in shapes):
        return None

    def real(a):  # the first n threads' addresses (NumPy: one pass each, no per-op dispatch)
        a = np.asarray(a, np.int64).reshape(-1)
        return np.broadcast_to(a, (max(a.shape[0], n),))[:n]

    def place(shape, a):  # the coordinate along k and the place without it (perm's order)
        at = {}
        for i in reversed(range(nd)):
            at[i], a = a % shape[i], a // shape[i]
        pos = np.zeros_like(at[k])
        for i in perm[:-1]:
            pos = pos * shape[i] + at[i]
        return at[k], pos

    pos = None
    for shape, acc in zip(lshapes, laccs, strict=True):
        shape = tuple(shape)
        numel = shape[k] * math.prod(rest)
        stride = math.prod(shape[k + 1 :])
        if not acc or len(acc) > shape[k]:
            return None
        base = real(acc[0])
        if base.min() < 0 or base.max() >= numel:
            return None
        for q, a in enumerate(acc):
            if not np.array_equal(real(a), base + q * stride):
                return None
        at, p = place(shape, base)
        if at.any() or (pos is not None and not np.array_equal(p, pos)):
            return None
        pos = p
    if np.unique(pos).shape[0] != n:
        return None
    rows, places = shapes[0][perm[-2]], math.prod(rest)
    lead = places // rows
    tables = []
    for shape, dst in zip(sshapes, sdsts, strict=True):
        shape = tuple(shape)
        numel = shape[k] * places
        dst = np.asarray(dst, np.int64)[:, :n]
        hit = dst != numel
        at, p = place(shape, np.where(hit, dst, 0))
        if np.logical_and(hit, p != pos[None, :]).any():
            return None
        q = dst.shape[0]
        table = np.full((places, q), -1, np.int32)
        table[pos] = np.where(hit, at, -1).T
        table = table.reshape(lead, rows, q)
        period = next(
            d
            for d in range(1, lead + 1)
            if lead % d == 0 and (table.reshape(-1, d, rows, q) == table[None, :d]).all()
        )
        tables.append((jnp.asarray(table[:period]), period))
    words = sum(_round_up(s[k], 128) for s in shapes) + sum(_round_up(s[k], 128) for s in sshapes)
    words += sum(_round_up(t.shape[2], 128) for t, _ in tables)
    if words * _round_up(rows, 8) * 4 * 2 > 8 * 1024 * 1024:
        return None  # the blocks, double-buffered, past 8 MiB of VMEM
    return perm, lead, rows, tables


def _lsel_shape(lsel, a):
    perm, lead, rows, _ = lsel
    return (lead, rows, a.shape[perm[-1]])


def _lsel_spec(lsel, a):
    return pl.BlockSpec((None, *_lsel_shape(lsel, a)[1:]), lambda i: (i, 0, 0))


def _lsel_ins(lsel, loads, stores):
    """The kernel's inputs in _lsel's view (lead, rows, k), a bitcast of each array's HBM layout:
    the loads, each store's prior content and its row table (its block the lead block's place
    in the table's period), with their block specs."""
    perm = lsel[0]
    ins = [a.transpose(perm).reshape(_lsel_shape(lsel, a)) for a in list(loads) + list(stores)]
    specs = [_lsel_spec(lsel, a) for a in list(loads) + list(stores)]
    for table, period in lsel[3]:
        ins.append(table)
        specs.append(pl.BlockSpec((None, *table.shape[1:]), lambda i, p=period: (i % p, 0, 0)))
    return ins, specs


def _lsel_result(o, lsel, shape, dt):
    perm = lsel[0]
    o = o.reshape(tuple(shape[i] for i in perm))
    return o.transpose(tuple(perm.index(i) for i in range(len(perm)))).astype(dt)


def _lsel_kernel(kernel, nloads):
    """kernel over _lsel's blocks: a load's iteration q is lane q of each row; a store's is a
    select of the lanes its row table names at q, over the block, which starts as the prior
    content; in the kernel's own order, a later iteration's write over an earlier one. Each
    block is read once and each output written once (the kernel's loops unroll at trace time;
    a block-wide ref access per iteration is what TPU interpret mode's checks pay for)."""

    def load(ref):
        held = []

        class Load:
            def __getitem__(self, q):
                if not held:
                    held.append(ref[...])
                return held[0][:, q : q + 1]

        return Load()

    def store(prior, table):
        o, t = [prior[...]], table[...]
        lane = lax.broadcasted_iota(jnp.int32, o[0].shape, 1)

        class Store:
            def __setitem__(self, q, v):
                hit = t[:, q : q + 1] == lane
                o[0] = jnp.where(hit, jnp.asarray(v).astype(o[0].dtype), o[0])

        return Store(), o

    def body(*refs):
        ns = (len(refs) - nloads) // 3
        loads = refs[:nloads]
        prior = refs[nloads : nloads + ns]
        tables = refs[nloads + ns : nloads + 2 * ns]
        outs = refs[nloads + 2 * ns :]
        stores = [store(p, t) for p, t in zip(prior, tables, strict=True)]
        kernel(*[load(r) for r in loads], *[s for s, _ in stores])
        for (_, v), o in zip(stores, outs, strict=True):
            o[...] = v[0]

    return body
