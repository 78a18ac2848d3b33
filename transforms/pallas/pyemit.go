package pallas

import (
	"regexp"
	"sort"
	"strings"
)

// Python emission helpers shared by the drafts: readable names for the
// translator's placeholders, dead-assignment pruning and the helper
// functions a module actually calls.

var (
	rePyIdent   = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	rePyString  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	rePyAssign  = regexp.MustCompile(`^(\s*)([A-Za-z_][A-Za-z0-9_]*) = (.*)$`)
	reTempName  = regexp.MustCompile(`^[a-z]{1,3}[0-9]+$`)
	pyKeywords  = "False None True and as assert async await break class continue def del elif else except finally for " + "from global if import in is lambda nonlocal not or pass raise return try while with yield"
	pyBuiltins  = "abs all any bool dict float int len list max min object range round slice str sum tuple type"
	draftNames  = "jax jnp lax pl pltpu functools itertools math run args interpret spec outs d D res np"
	pyDraftSafe = func() map[string]bool {
		m := map[string]bool{}
		for _, s := range []string{pyKeywords, pyBuiltins, draftNames} {
			for _, w := range strings.Fields(s) {
				m[w] = true
			}
		}
		return m
	}()
)

// pyIdents are the identifiers a line reads, string literals left out.
func pyIdents(line string) []string {
	return rePyIdent.FindAllString(rePyString.ReplaceAllString(line, `""`), -1)
}

// pruneDead drops the simple assignments ("name = expr" at the block's own
// indentation) whose name no later kept line reads, nor live: the
// straight-line code the drafts emit computes every launch quantity, and a
// kernel needs few of them.
func pruneDead(lines []string, live ...string) []string {
	if len(lines) == 0 {
		return lines
	}
	base := len(lines[0]) - len(strings.TrimLeft(lines[0], " "))
	used := map[string]bool{}
	for _, l := range live {
		used[l] = true
	}
	keep := make([]bool, len(lines))
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		if m := rePyAssign.FindStringSubmatch(line); m != nil && len(m[1]) == base {
			if !used[m[2]] {
				continue
			}
			delete(used, m[2])
			for _, id := range pyIdents(m[3]) {
				used[id] = true
			}
			keep[i] = true
			continue
		}
		keep[i] = true
		for _, id := range pyIdents(line) {
			used[id] = true
		}
	}
	var out []string
	for i, l := range lines {
		if keep[i] {
			out = append(out, l)
		}
	}
	return out
}

// readsName reports whether any line reads name.
func readsName(lines []string, name string) bool {
	for _, l := range lines {
		for _, id := range pyIdents(l) {
			if id == name {
				return true
			}
		}
	}
	return false
}

// renamer maps the translator's placeholder names (p_<param>, s_<symbol>,
// bd_x, ...) to the names a reviewer reads; every new name is unique and
// clear of Python's keywords, builtins and the module's own names.
type renamer struct {
	to    map[string]string
	taken map[string]bool
}

func newRenamer() *renamer { return &renamer{to: map[string]string{}, taken: map[string]bool{}} }

// add maps from to the first free spelling of want.
func (r *renamer) add(from, want string) string {
	if got, ok := r.to[from]; ok {
		return got
	}
	name := want
	if pyDraftSafe[name] || reTempName.MatchString(name) || strings.HasPrefix(name, "_") {
		name += "_"
	}
	for r.taken[name] {
		name += "_"
	}
	r.taken[name] = true
	r.to[from] = name
	return name
}

// addOr maps from to want when it is free, else to the first free spelling
// of alt.
func (r *renamer) addOr(from, want, alt string) string {
	if _, ok := r.to[from]; !ok && !r.taken[want] && !pyDraftSafe[want] {
		return r.add(from, want)
	}
	return r.add(from, alt)
}

// apply renames every mapped identifier in s (string literals kept).
func (r *renamer) apply(s string) string {
	if len(r.to) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	strs := rePyString.FindAllStringIndex(s, -1)
	inString := func(i int) bool {
		for _, sp := range strs {
			if i >= sp[0] && i < sp[1] {
				return true
			}
		}
		return false
	}
	for _, m := range rePyIdent.FindAllStringIndex(s, -1) {
		id := s[m[0]:m[1]]
		to, ok := r.to[id]
		if !ok || inString(m[0]) || (m[0] > 0 && s[m[0]-1] == '.') {
			continue
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(to)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// helper is one function a draft may call, with the helpers it calls.
type helper struct {
	name string
	uses []string
	src  string
}

// helpers are the functions drafts call, in the order a module defines them.
var helpers = []helper{
	{"_round_up", nil, `def _round_up(v, m):
    return (v + m - 1) // m * m`},
	{"_c_div", nil, `def _c_div(a, b, dt):
    """C integer division (truncates toward zero)."""
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    a, b = jnp.broadcast_arrays(jnp.asarray(a, dt), jnp.asarray(b, dt))
    return lax.div(a, b)`},
	{"_c_rem", []string{"_c_div"}, `def _c_rem(a, b, dt):
    """C remainder (takes the sign of the dividend)."""
    if isinstance(a, int) and isinstance(b, int):
        return a - _c_div(a, b, dt) * b
    a, b = jnp.broadcast_arrays(jnp.asarray(a, dt), jnp.asarray(b, dt))
    return lax.rem(a, b)`},
	{"_cast", nil, `def _cast(x, dt):
    return jnp.asarray(x).astype(dt)`},
	{"_form", nil, `_FORCE = None  # set by the validator only (pallasify_harness); None when a user imports it


def _form(name, natural, applies=True):
    """Whether run() takes the first of the two forms of decision name (the helper that decides):
    natural, the choice of the shapes, unless the validator, to prove both, forces one through
    _FORCE (the first only where it applies)."""
    return natural if _FORCE is None else _FORCE(name, natural, applies)`},
	{"_column_major", []string{"_form"}, `def _column_major(rows, cols):
    """Whether XLA keeps a (rows, cols) array of 32- or 16-bit values column-major on a TPU:
    the (8, 128)-tiled layout that pads it less, row-major on a tie (libtpu 0.0.52: v5e, v6e,
    TPU7x). Only the traffic depends on it; the kernel then runs over the transposes."""
    by_rows = pl.cdiv(rows, 8) * 8 * pl.cdiv(cols, 128) * 128
    by_cols = pl.cdiv(cols, 8) * 8 * pl.cdiv(rows, 128) * 128
    return _form("column_major", by_cols < by_rows)`},
	{"_layout", []string{"_round_up"}, `def _layout(n, sub):
    """Lane-dense layout of n elements: (lanes, block rows, padded rows)."""
    lanes = 512 if n >= 512 * 64 else 128
    rows = pl.cdiv(n, lanes)
    br = min(_round_up(rows, sub), 64 if lanes == 512 else 256)
    br = _round_up(br, sub)
    return lanes, br, _round_up(rows, br)`},
	{"_blocked", nil, `def _blocked(a, dp, lanes):
    flat = a.reshape(-1)
    return jnp.pad(flat, (0, dp - flat.shape[0])).reshape(dp // lanes, lanes)`},
	{"_gather", nil, `def _gather(a, idx, dp, lanes):
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    return jnp.take(a.reshape(-1), idx, mode="clip").reshape(dp // lanes, lanes)`},
	{"_gather_loop", []string{"_gather"}, `def _gather_loop(a, idxs, dp, lanes):
    """a gathered at each iteration's indices: (iterations, dp // lanes, lanes)."""
    if not idxs:
        return jnp.zeros((1, dp // lanes, lanes), a.dtype)
    return jnp.stack([_gather(a, i, dp, lanes) for i in idxs])`},
	{"_take_each", nil, `def _take_each(a, idxs):
    """a's element at each iteration's address (the same for every element): (iterations,);
    static slices, each address clipped into a as jnp.take's "clip" mode does (an XLA gather of
    them moves more bytes than the kernel)."""
    if not idxs:
        return jnp.zeros((1,), a.dtype)
    flat = a.reshape(-1)
    return jnp.stack([flat[min(max(int(i), 0), flat.shape[0] - 1)] for i in idxs])`},
	{"_halo_offsets", nil, `def _halo_offsets(offs, lanes):
    """Each iteration's offset into a block of _halo's rows (its low halo rows added)."""
    lo = pl.cdiv(max(0, -min(offs, default=0)), lanes) * lanes
    return tuple(int(o) + lo for o in offs)`},
	{"_halo", nil, `def _halo(a, offs, dp, lanes):
    """a flat, zero-padded by whole rows so that every element's reads at the offsets from its own
    position stay inside: (rows, lanes), the low halo rows first (_halo_offsets), a block of
    them per grid step."""
    lo = pl.cdiv(max(0, -min(offs, default=0)), lanes) * lanes
    hi = (max(0, max(offs, default=0)) // lanes + 1) * lanes
    flat = a.reshape(-1)[: dp + hi]
    return jnp.pad(flat, (lo, dp + hi - flat.shape[0])).reshape(-1, lanes)`},
	{"_own_rows", []string{"_column_major", "_form"}, `def _own_rows(shape, sub):
    """Whether a kernel may run over rows of the array's last dimension (128 to 8192 lanes,
    blocks of whole rows that fit VMEM) that XLA keeps as they are, so that viewing it as (rows,
    last) is a bitcast: a 2-D array row-major, a larger one in whole tiles of sub rows (libtpu
    0.0.52). Only the traffic depends on it, and on the 8192: rows of at least 128 lanes."""
    if not 128 <= shape[-1] <= 8192:
        own = False
    elif len(shape) == 2:
        own = not _column_major(*shape)
    else:
        own = shape[-2] % sub == 0
    return _form("own_rows", own, shape[-1] >= 128)`},
	{"_row_halo_rows", []string{"_round_up"}, `def _row_halo_rows(offs, lanes, sub):
    """The zero rows (low, high) _row_halo puts around rows of lanes elements so that every
    element's reads at the offsets from its own position stay inside: whole tiles of sub rows."""
    lo = _round_up(pl.cdiv(max(0, -min(offs, default=0)), lanes), sub)
    hi = _round_up(max(0, max(offs, default=0)) // lanes + 1, sub)
    return lo, hi`},
	{"_row_halo_offsets", []string{"_row_halo_rows"}, `def _row_halo_offsets(offs, lanes, sub):
    """Each iteration's offset into a block of _row_halo's rows (its low halo rows added)."""
    lo, _ = _row_halo_rows(offs, lanes, sub)
    return tuple(int(o) + lo * lanes for o in offs)`},
	{"_row_halo", []string{"_row_halo_rows"}, `def _row_halo(a, offs, prows, lanes, sub):
    """a in rows of lanes elements (a bitcast of its own layout when sub divides the rows of
    its last two dimensions), padded with zero rows to prows rows and _row_halo_rows's halo, the
    low halo rows first (_row_halo_offsets), a block of them per grid step."""
    lo, hi = _row_halo_rows(offs, lanes, sub)
    a = a.reshape(-1, lanes)
    return jnp.pad(a, ((lo, prows - a.shape[0] + hi), (0, 0)))`},
	{"_shifted", nil, `def _shifted(ref, off, shape):
    """The block's elements off places on in the halo block ref (a row offset, a lane rotation)."""
    rows, lanes = shape
    q, r = divmod(off, lanes)
    a = ref[pl.ds(q, rows), :]
    if r == 0:
        return a
    b = ref[pl.ds(q + 1, rows), :]
    lane = lax.broadcasted_iota(jnp.int32, shape, 1)
    return jnp.where(lane < lanes - r, pltpu.roll(a, lanes - r, 1), pltpu.roll(b, lanes - r, 1))`},
	{"_plane", []string{"_form"}, `def _plane(shape, addrs, ext):
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
    if any(a < 0 or r + sy * (ey - 1) >= h or c + sx * (ex - 1) >= w for a, (r, c) in zip(a0, offs, strict=True)):
        return None
    tile = pl.cdiv(h, 8) * 8 * pl.cdiv(w, 128) * 128
    cols = pl.cdiv(ey, 128) * 128 * pl.cdiv(w, 8) * 8
    fits = 4 * (3 * tile + cols + 2 * pl.cdiv(ey, 8) * 8 * pl.cdiv(ex, 128) * 128) <= 8 * 2**20
    return (sy, sx, offs) if _form("plane", fits) else None`},
	{"_numel", nil, `def _numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n`},
	{"_plane_scratch", nil, `def _plane_scratch(plane, ey, dt):
    """_window_read's buffers: the plane's 128-lane chunks, the window rows' transpose's."""
    h, w = (int(n) for n in plane)
    return [pltpu.VMEM((pl.cdiv(w, 128), h, 128), dt), pltpu.VMEM((pl.cdiv(ey, 128), w, 128), dt)]`},
	{"_lane_chunks", nil, `def _lane_chunks(buf, v):
    """Stores v's 128-lane chunks into buf (chunks, rows, 128)."""
    for j in range(buf.shape[0]):
        w = min(128, v.shape[1] - j * 128)
        buf[j, : v.shape[0], :w] = v[:, j * 128 : j * 128 + w]`},
	{"_strided_rows", nil, `def _strided_rows(buf, start, n, stride, width):
    """Rows start, start + stride, ... (n of them) of the (rows, width) value whose 128-lane chunks
    buf holds (a strided load needs a buffer whose last dim is 128)."""
    parts = []
    for j in range(buf.shape[0]):
        w = min(128, width - j * 128)
        parts.append(buf.at[j][pl.ds(start, n, stride=stride), :][:, :w])
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=1)`},
	{"_plane_stage", []string{"_lane_chunks"}, `def _plane_stage(ref, scratch, plane):
    """Copies a window load's plane into 128-lane chunks (plane not None); no rows held yet."""
    if plane is not None:
        _lane_chunks(scratch[0], ref[...])
    return None`},
	{"_window_read", []string{"_lane_chunks", "_strided_rows"}, `def _window_read(ref, scratch, plane, it, shape, held):
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
    return _strided_rows(scratch[1], c, ex, sx, ey).T, r`},
	{"_h2f", nil, `def _h2f(h):
    """The float32 value of float16 bits h (int16, as a kernel loads a float16 array), decoded
    exactly with integer ops: sign, exponent, mantissa, subnormals, inf and NaN."""
    h = h.astype(jnp.int32)
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    normal = ((e + 112) << 23) | (m << 13)
    special = 0x7F800000 | (m << 13)  # inf, NaN
    tiny = lax.bitcast_convert_type(m.astype(jnp.float32) * 5.9604644775390625e-08, jnp.int32)
    bits = jnp.where(e == 0, tiny, jnp.where(e == 0x1F, special, normal))
    return lax.bitcast_convert_type(bits | jnp.where(h < 0, -0x80000000, 0), jnp.float32)`},
	{"_f2h", nil, `def _f2h(x):
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
    return jnp.where(b < 0, h - 0x8000, h).astype(jnp.int16)`},
	{"_f16", []string{"_h2f", "_f2h"}, `def _f16(x):
    """x rounded to float16 as __float2half rounds it, kept in float32: half arithmetic rounds
    every result."""
    return _h2f(_f2h(x))`},
	{"_f16_bits", nil, `def _f16_bits(a):
    """A float16 array as its int16 bits, the form a kernel loads and stores (Mosaic has no
    float16 refs on v5e, v6e or TPU7x); an input's view is fused into the kernel."""
    return lax.bitcast_convert_type(a, jnp.int16)`},
	{"_bits_f16", nil, `def _bits_f16(b):
    """The float16 array whose bits a kernel stored (b itself where the kernel stored them
    through _f16_out into a float16 block)."""
    return b if b.dtype == jnp.float16 else lax.bitcast_convert_type(b, jnp.float16)`},
	{"_f16_block", nil, `def _f16_block(interpret):
    """The dtype of a float16 output's kernel blocks: float16, stored as bits through
    _f16_out, so that no XLA copy of an int16 result follows the kernel; int16 under
    interpret=True, whose interpreter (jax's generic one) has no stores through a bitcast."""
    return jnp.int16 if interpret is True else jnp.float16`},
	{"_f16_out", nil, `def _f16_out(ref):
    """The int16 view of a float16 output block, which the kernel stores bits to (Mosaic has
    no float16 vectors: the block is bitcast, its bits unchanged); an int16 block itself."""
    return ref.bitcast(jnp.int16) if ref.dtype == jnp.float16 else ref`},
	{"_take", nil, `def _take(a, idx, dp, lanes):
    """a's elements at idx (a gather by value); NaN where idx is outside a: a CUDA read there is
    undefined, so the draft poisons it rather than clamp to a neighbour."""
    flat = a.reshape(-1)
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    if flat.shape[0] == 0:
        return jnp.full((dp // lanes, lanes), jnp.nan, flat.dtype)
    inside = jnp.logical_and(idx >= 0, idx < flat.shape[0])
    got = jnp.take(flat, jnp.where(inside, idx, 0), mode="clip")  # in bounds: inside
    return jnp.where(inside, got, jnp.nan).astype(flat.dtype).reshape(dp // lanes, lanes)`},
	{"_vperm", []string{"_column_major", "_round_up", "_form"}, `def _vperm(shape):
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
    return order`},
	{"_vview", []string{"_vperm"}, `def _vview(shape):
    """The 3-D view (lead, rows, cols) a gather draft reads an array of shape in: a bitcast of
    its HBM layout, the dimensions in the order XLA keeps them (_vperm), the leading ones
    merged; a 1-D array in 128-lane rows (padded to whole rows). Also its meta for _vtake,
    _vpos and _vback: (shape, order)."""
    if len(shape) == 1:
        return (1, pl.cdiv(shape[0], 128), 128), (tuple(shape), (0,))
    perm = _vperm(shape)
    rows, cols = shape[perm[-2]], shape[perm[-1]]
    lead = 1
    for i in perm[:-2]:
        lead *= shape[i]
    return (lead, rows, cols), (tuple(shape), perm)`},
	{"_vsrc", []string{"_vview"}, `def _vsrc(a):
    """a in its _vview, and the meta of that view."""
    view, meta = _vview(a.shape)
    if a.ndim == 1:
        return jnp.pad(a, (0, view[1] * 128 - a.shape[0])).reshape(view), meta
    return a.transpose(meta[1]).reshape(view), meta`},
	{"_plane_view", []string{"_vperm"}, `def _plane_view(shape, plane):
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
    return (0, 1, 2)`},
	{"_plane_layout", []string{"_plane_view"}, `def _plane_layout(shape, oshapes, ext, zfree):
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
    return 1, [(0, 1, 2) if o[0] else o for o in orders]`},
	{"_plane_array", nil, `def _plane_array(a, layout):
    """The window load's array as the plane form's operand: its (planes, rows, cols) view in its
    _plane_layout order (a bitcast of its HBM layout)."""
    return a.reshape(-1, *a.shape[-2:]).transpose(layout[1][0])`},
	{"_plane_spec", nil, `def _plane_spec(layout, i, plane):
    """The block spec of array i of _plane_layout (0 the load's, then the outputs): zb planes of
    the (rows, cols) plane, in its order."""
    zb, orders = layout
    z = orders[i].index(0)
    block = tuple((zb, *plane)[k] for k in orders[i])
    return pl.BlockSpec(block, lambda g, *_: tuple(g if k == z else 0 for k in range(3)))`},
	{"_plane_struct", nil, `def _plane_struct(layout, i, ext, dt):
    """Output i of _plane_layout (1 the first) over the domain ext = (ez, ey, ex), in its order."""
    return jax.ShapeDtypeStruct(tuple(ext[k] for k in layout[1][i]), dt)`},
	{"_plane_result", nil, `def _plane_result(o, layout, i, shape):
    """Output i of _plane_layout as the array of shape."""
    order = layout[1][i]
    return o.transpose([order.index(k) for k in range(3)]).reshape(shape)`},
	{"_plane_ref", nil, `def _plane_ref(ref, order, z):
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

    return PlaneRef()`},
	{"_plane_kernel", []string{"_plane_ref"}, `def _plane_kernel(kernel, layout):
    """kernel over one plane of a block of _plane_layout's zb planes, the plane the grid's second
    index (the block stays in VMEM across it, read and written back once); the load's and the
    outputs' refs that plane's _plane_ref, the scratch buffers the kernel's own."""
    zb, orders = layout

    def body(*refs):
        n = len(orders)
        z = pl.program_id(1) if zb > 1 else 0
        kernel(*(_plane_ref(r, o, z) for r, o in zip(refs[:n], orders, strict=True)), *refs[n:])

    return body`},
	{"_plane_grid", nil, `def _plane_grid(layout, ez):
    """The plane form's grid over ez planes and its dimension semantics: a step per plane, the
    blocks of _plane_layout's zb planes first (parallel), then the plane in its block."""
    zb = layout[0]
    if zb == 1:
        return (ez,), ("parallel",)
    return (ez // zb, zb), ("parallel", "arbitrary")`},
	{"_vwhole", []string{"_round_up"}, `def _vwhole(view):
    """The block spec of a whole _vsrc view in VMEM, the same block at every grid step (read
    from HBM once); its last two dimensions padded to whole tiles."""
    sub = 32 // view.dtype.itemsize
    lead, rows, cols = view.shape
    return pl.BlockSpec((lead, _round_up(rows, sub), _round_up(cols, 128)), lambda *_: (0, 0, 0))`},
	{"_vfits", []string{"_round_up", "_form"}, `def _vfits(*views):
    """Whether _vtake may gather from these _vsrc views in VMEM: none empty, at most 512 KiB of
    32-bit words in all (1 MiB of VMEM in the two buffers Pallas keeps; _vtake visits every source
    row of 128 lanes per index block) and at most 4096 columns each (its unrolled lanes)."""
    words = 0
    for v in views:
        lead, rows, cols = v.shape
        words += lead * _round_up(rows, 32 // v.dtype.itemsize) * _round_up(cols, 128)
    applies = all(v.size > 0 and v.shape[2] <= 4096 for v in views)
    return _form("vfits", applies and words * 4 <= 512 * 1024, applies)`},
	{"_vpos", nil, `def _vpos(meta, lead, row, col):
    """The flat (row-major) index in the array of the element at (lead, row, col) of its
    _vview."""
    shape, perm = meta
    if len(shape) == 1:
        return row * 128 + col
    at = {perm[-2]: row, perm[-1]: col}
    for i in reversed(perm[:-2]):
        at[i] = lead % shape[i]
        lead = lead // shape[i]
    flat = 0
    for i, s in enumerate(shape):
        flat = flat * s + at[i]
    return flat`},
	{"_vtake", nil, `def _vtake(src_ref, meta, idx, fill=None):
    """The flat elements of the source at idx (an int32 block, its lanes a multiple of 128),
    gathered in the kernel from its whole _vsrc view in VMEM: per source row of 128 lanes a
    lane gather inside one vreg and a select, so every value is copied exactly (16-bit ones
    widened to int32). Where idx is outside the array: fill (NaN: a CUDA read there is
    undefined), or idx clipped into it when fill is None."""
    shape, perm = meta
    n = 1
    for s in shape:
        n *= s
    idx = jnp.asarray(idx, jnp.int32)
    inside = jnp.logical_and(idx >= 0, idx < n)
    idx = jnp.clip(idx, 0, n - 1)
    if len(shape) == 1:
        rows, cols = pl.cdiv(n, 128), 128
    else:
        rows, cols = shape[perm[-2]], shape[perm[-1]]
    if perm != tuple(range(len(shape))):  # the index in the view
        at, rest = {}, idx
        for i in reversed(range(len(shape))):
            at[i], rest = rest % shape[i], rest // shape[i]
        idx = 0
        for i in perm:
            idx = idx * shape[i] + at[i]
    per_row = pl.cdiv(cols, 128)
    col = idx % cols
    key = idx // cols * per_row + (col >> 7)  # (view row, 128-lane part) of each element
    lane = col & 127
    sub = 32 // src_ref.dtype.itemsize
    wide = jnp.int32 if sub == 16 else src_ref.dtype
    parts = pl.cdiv(rows, sub)

    def rows_of(g, got, held=None):
        lead, r0 = g // parts, g % parts * sub
        for c in range(per_row):
            if held is None:
                src = src_ref[lead, pl.ds(pl.multiple_of(r0, sub), sub), pl.ds(c * 128, 128)]
            else:
                src = held[lead, r0 : r0 + sub, c * 128 : (c + 1) * 128]
            src = src.astype(wide)
            for s in range(min(sub, rows)):
                k = jnp.where(r0 + s < rows, (lead * rows + r0 + s) * per_row + c, -1)
                v = jnp.broadcast_to(src[s : s + 1, :], (idx.shape[0], 128))
                v = jnp.take_along_axis(v, lane, axis=1, mode="promise_in_bounds")
                got = jnp.where(key == k, v, got)
        return got

    steps = src_ref.shape[0] * parts
    if steps * per_row > 32:
        got = lax.fori_loop(0, steps, rows_of, jnp.zeros(idx.shape, wide))
    else:  # at most 32 tiles (a window): read once, its rows unrolled
        held, got = src_ref[...], jnp.zeros(idx.shape, wide)
        for g in range(steps):
            got = rows_of(g, got, held)
    return got if fill is None else jnp.where(inside, got, jnp.asarray(fill, wide))`},
	{"_vback", nil, `def _vback(o, meta):
    """An output written in its _vview, in its own shape."""
    shape, perm = meta
    if len(shape) == 1:
        return o.reshape(-1)[: shape[0]]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return o.reshape([shape[p] for p in perm]).transpose(inv)`},
	{"_vnd", []string{"_vsrc", "_vperm"}, `def _vnd(a):
    """a with its dimensions in the order XLA lays them out on a TPU (_vperm), unmerged: a
    bitcast of its HBM layout (a 1-D array in 128-lane rows, as _vsrc), and _vsrc's meta."""
    if a.ndim == 1:
        return _vsrc(a)
    meta = (tuple(a.shape), _vperm(a.shape))
    return a.transpose(meta[1]), meta`},
	{"_vcoords", nil, `def _vcoords(meta, idx):
    """The coordinates in its _vnd view of an array's flat element idx (NumPy or jnp)."""
    shape, perm = meta
    if len(shape) == 1:
        return 0 * idx, idx // 128, idx % 128
    at, rest = {}, idx
    for i in reversed(range(len(shape))):
        at[i], rest = rest % shape[i], rest // shape[i]
    return tuple(at[i] for i in perm)`},
	{"_vwin_at", []string{"_vcoords"}, `def _vwin_at(meta, at, idx):
    """_vtake's (meta, idx) for an array of meta: its own when at is None (the whole view in
    VMEM), else a window's: at is (origin, block), a block of its _vnd view at origin, and
    idx (clipped into the array) the flat index in that block, its leading dims merged and
    its last two no longer than the view's (_vtake visits no row of the block's padding)."""
    if at is None:
        return meta, idx
    origin, block = at
    shape, perm = meta
    view = (1, pl.cdiv(shape[0], 128), 128) if len(shape) == 1 else [shape[p] for p in perm]
    inner = (*block[:-2], min(block[-2], view[-2]), min(block[-1], view[-1]))
    flat = 0
    coords = _vcoords(meta, jnp.clip(idx, 0, math.prod(shape) - 1))
    for c, o, b in zip(coords, origin, inner, strict=True):
        flat = flat * b + c - o
    return ((math.prod(block[:-2]), *inner[-2:]), (0, 1, 2)), flat`},
	{"_vwin", []string{"_vcoords", "_round_up", "_form"}, `def _vwin(srcs, oview, oblock):
    """The windows the kernel gathers from when the arrays do not fit VMEM whole: per source
    (its _vnd view, meta, and per load of it its reads' flat addresses over the output's view
    oview, an iterable of arrays, and whether the thread reads each, None: always), the
    smallest block of its view (whole tiles) such that at every grid step (oblock blocks of
    oview) every element read lies in one block. Checked in NumPy at trace time (the addresses
    depend on sizes only), one read at a time. Returns (the block table, flat: per step,
    source and dim the block's index; the blocks; their specs), or None when a read is outside
    its array, the windows pass _vfits' budget or the output 16M elements (the check's own
    cost)."""
    if math.prod(oview) > 1 << 24:
        return None
    lead, rows, cols = oview
    brows, bcols = oblock
    ni, nj = pl.cdiv(rows, brows), pl.cdiv(cols, bcols)
    ol, orow, ocol = np.indices(oview)
    step = ((ol * ni + orow // brows) * nj + ocol // bcols).reshape(-1)
    steps = lead * ni * nj
    columns, blocks, words = [], [], 0
    for view, meta, addrs, reads in srcs:
        n, nd = math.prod(meta[0]), view.ndim
        lo = np.full((steps, nd), np.iinfo(np.int64).max)
        hi = np.full((steps, nd), -1)
        lives = [itertools.repeat(True)] * len(addrs) if reads is None else reads
        groups = zip(addrs, lives, strict=True)
        for a, r in itertools.chain.from_iterable(zip(g, v, strict=False) for g, v in groups):
            a = np.broadcast_to(np.asarray(a, np.int64), oview).reshape(-1)
            r = np.broadcast_to(np.asarray(r, bool), oview).reshape(-1)
            a, s = a[r], step[r]
            if a.size and (a.min() < 0 or a.max() >= n):
                return None  # a read outside the array
            at = np.stack(_vcoords(meta, a), axis=1)
            np.minimum.at(lo, s, at)
            np.maximum.at(hi, s, at)
        used = hi[:, 0] >= 0
        if not used.any():
            return None
        last = np.maximum.accumulate(np.where(used, np.arange(steps), -1))
        last = np.where(last < 0, int(np.argmax(used)), last)  # a step that reads none: the last block
        sub = 32 // view.dtype.itemsize
        block = []
        for e in range(nd):
            unit = {nd - 2: sub, nd - 1: 128}.get(e, 1)
            full = _round_up(view.shape[e], unit)
            span = int((hi[used, e] - lo[used, e]).max()) + 1
            sizes = list(range(_round_up(span, unit), full, unit))[:64] + [full]
            b = next(b for b in sizes if (lo[used, e] // b == hi[used, e] // b).all())
            block.append(b)
            columns.append(lo[last, e] // b)
        blocks.append(tuple(block))
        words += math.prod(block) * view.dtype.itemsize // 4
    fits = words * 4 <= 512 * 1024 and all(b[-1] <= 4096 for b in blocks)
    if not _form("vwin", fits, fits):
        return None
    table = np.stack(columns, axis=1).reshape(-1).astype(np.int32)
    specs, first = [], 0
    for block in blocks:
        nd = len(block)

        def index(lead, i, j, t, first=first, nd=nd):
            at = ((lead * ni + i) * nj + j) * len(columns) + first
            return tuple(t[at + e] for e in range(nd))

        specs.append(pl.BlockSpec(block, index))
        first += len(block)
    return jnp.asarray(table), blocks, specs`},
	{"_vwin_kernel", nil, `def _vwin_kernel(kernel, names, blocks, at):
    """kernel over _vwin's windows (its refs at positions at): each read as _vtake reads a 3-D
    block (its leading dims merged; read whole, [...], reshaped so), its origin (the block's
    index in the table at this grid step, times the block) passed to kernel as names' keyword."""

    def merged(ref):
        dims = ref.shape[:-2]

        class Merged:
            shape = (math.prod(dims), *ref.shape[-2:])
            dtype = ref.dtype

            def __getitem__(self, key):
                if key is Ellipsis:
                    return ref[...].reshape(self.shape)
                lead, rows, cols = key
                idx = []
                for s in reversed(dims):
                    idx.insert(0, lead % s)
                    lead = lead // s
                return ref[(*idx, rows, cols)]

        return Merged()

    def body(table_ref, *refs):
        step = (pl.program_id(0) * pl.num_programs(1) + pl.program_id(1)) * pl.num_programs(2)
        step = step + pl.program_id(2)
        width = sum(len(b) for b in blocks)
        refs, origins, first = list(refs), {}, 0
        for name, block, i in zip(names, blocks, at, strict=True):
            origin = tuple(table_ref[step * width + first + e] * block[e] for e in range(len(block)))
            origins[name] = (origin, block)
            refs[i] = refs[i] if len(block) == 3 else merged(refs[i])
            first += len(block)
        kernel(*refs, **origins)

    return body`},
	{"_loop_dst", nil, `def _loop_dst(idxs, masks, d, n, size):
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
    return dst`},
	{"_scatter_loop", nil, `def _scatter_loop(base, dst, o):
    return base.at[dst.reshape(-1)].set(o.reshape(-1).astype(base.dtype), mode="drop")`},
	{"_unblock", nil, `def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)`},
	{"_scatter", nil, `def _scatter(base, idx, mask, o, d, n):
    dp = d.shape[0]
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    keep = jnp.logical_and(jnp.broadcast_to(jnp.asarray(mask), (dp,)), d < n)
    dst = jnp.where(keep, idx, base.shape[0])
    return base.at[dst].set(o.reshape(-1).astype(base.dtype), mode="drop")`},
	{"_rows", nil, `def _rows(a, rows, stride, cols, rows_p):
    """a viewed as rows of stride elements, padded to (rows_p, cols)."""
    flat = a.reshape(-1)[: rows * stride]
    flat = jnp.pad(flat, (0, rows * stride - flat.shape[0]))
    return jnp.pad(flat.reshape(rows, stride), ((0, rows_p - rows), (0, cols - stride)))`},
	{"_lane_rows", nil, `def _lane_rows(a, n, n_p):
    """The first n elements of a, padded to n_p (a multiple of 1024), in 128-lane rows."""
    flat = a.reshape(-1)[:n]
    return jnp.pad(flat, (0, n_p - flat.shape[0])).reshape(n_p // 128, 128)`},
	{"_lanes", nil, `def _lanes(ref, start, width, per_row):
    """Columns [start, start + width) of every row of a block whose rows are
    per_row consecutive 128-lane rows (start, width multiples of 128)."""
    rows = ref.shape[0] // per_row
    parts = [ref[pl.ds(c // 128, rows, stride=per_row), :] for c in range(start, start + width, 128)]
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=1)`},
	{"_row_values", nil, `def _row_values(o, rows, shape, dt):
    """One value per row from (rows_p, 1) or (1, rows_p) blocks, in shape (zeros past rows)."""
    n = 1
    for s in shape:
        n *= s
    flat = o.reshape(-1)[:rows]
    flat = jnp.pad(flat, (0, max(0, n - flat.shape[0])))
    return flat[:n].reshape(shape).astype(dt)`},
	{"_cols", []string{"_vperm", "_round_up", "_numel"}, `def _cols(shapes, accs, stores, n, tables):
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
    return shape, perm, (lead, shape[k], mid, rows, cols), pos`},
	{"_cols_view", nil, `def _cols_view(a, cols):
    """a in _cols' view (lead, k, mid, rows, cols): a bitcast of its HBM layout."""
    return a.transpose(cols[1]).reshape(cols[2])`},
	{"_cols_result", nil, `def _cols_result(o, cols, dt):
    shape, perm, _, _ = cols
    o = o.reshape(tuple(shape[i] for i in perm))
    return o.transpose(tuple(perm.index(i) for i in range(len(perm)))).astype(dt)`},
	{"_cols_index", nil, `def _cols_index(idx, cols):
    """Each thread's index (idx, the first threads real) at its place in _cols' view, without
    the k dim: (lead, mid, rows, cols)."""
    lead, _, mid, rows, cols_ = cols[2]
    pos = cols[3]
    idx = jnp.asarray(idx, jnp.int32).reshape(-1)
    idx = jnp.broadcast_to(idx, (max(idx.shape[0], pos.shape[0]),))[: pos.shape[0]]
    return jnp.zeros_like(pos).at[pos].set(idx).reshape(lead, mid, rows, cols_)`},
	{"_cols_spec", nil, `def _cols_spec(cols, looped):
    _, k, _, rows, cols_ = cols[2]
    if looped:
        return pl.BlockSpec((None, k, None, rows, cols_), lambda i, j: (i, 0, j, 0, 0))
    return pl.BlockSpec((None, None, rows, cols_), lambda i, j: (i, j, 0, 0))`},
	{"_cols_take", nil, `def _cols_take(table_ref, idx_ref):
    """A table (SMEM) read at an index block: each position's element, the index clipped into
    the table (as the padded form's take); the kernel's whole load of that block (x[...] of the
    array is the array)."""
    idx = jnp.clip(idx_ref[...], 0, table_ref.shape[0] - 1)
    out = jnp.zeros(idx.shape, table_ref.dtype)
    for e in range(table_ref.shape[0]):
        out = jnp.where(idx == e, table_ref[e], out)
    return out`},
	{"_cols_kernel", []string{"_cols_take"}, `def _cols_kernel(kernel, takes):
    """kernel over _cols' blocks: each load takes[i] marks is its table and index refs, the
    kernel given the elements taken (_cols_take)."""

    def body(*refs):
        args, j = [], 0
        for t in takes:
            args.append(_cols_take(refs[j], refs[j + 1]) if t else refs[j])
            j += 2 if t else 1
        kernel(*args, *refs[j:])

    return body`},
	{"_lsel", []string{"_vperm", "_round_up"}, `def _lsel(lshapes, laccs, sshapes, sdsts, n):
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
    return perm, lead, rows, tables`},
	{"_lsel_shape", nil, `def _lsel_shape(lsel, a):
    perm, lead, rows, _ = lsel
    return (lead, rows, a.shape[perm[-1]])`},
	{"_lsel_spec", []string{"_lsel_shape"}, `def _lsel_spec(lsel, a):
    return pl.BlockSpec((None, *_lsel_shape(lsel, a)[1:]), lambda i: (i, 0, 0))`},
	{"_lsel_ins", []string{"_lsel_spec", "_lsel_shape"}, `def _lsel_ins(lsel, loads, stores):
    """The kernel's inputs in _lsel's view (lead, rows, k), a bitcast of each array's HBM layout:
    the loads, each store's prior content and its row table (its block the lead block's place
    in the table's period), with their block specs."""
    perm = lsel[0]
    ins = [a.transpose(perm).reshape(_lsel_shape(lsel, a)) for a in list(loads) + list(stores)]
    specs = [_lsel_spec(lsel, a) for a in list(loads) + list(stores)]
    for table, period in lsel[3]:
        ins.append(table)
        specs.append(pl.BlockSpec((None, *table.shape[1:]), lambda i, p=period: (i % p, 0, 0)))
    return ins, specs`},
	{"_lsel_result", nil, `def _lsel_result(o, lsel, shape, dt):
    perm = lsel[0]
    o = o.reshape(tuple(shape[i] for i in perm))
    return o.transpose(tuple(perm.index(i) for i in range(len(perm)))).astype(dt)`},
	{"_lsel_kernel", nil, `def _lsel_kernel(kernel, nloads):
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

    return body`},
	{"_unrows", nil, `def _unrows(o, rows, stride, shape, dt):
    n = 1
    for s in shape:
        n *= s
    flat = o[:rows, :stride].reshape(-1)
    flat = jnp.pad(flat, (0, max(0, n - flat.shape[0])))
    return flat[:n].reshape(shape).astype(dt)`},
}

// usedHelpers are the definitions of the helpers body calls (and those they
// call), in definition order.
func usedHelpers(body string) string {
	need := map[string]bool{}
	for _, id := range pyIdents(body) {
		need[id] = true
	}
	for i := len(helpers) - 1; i >= 0; i-- {
		if need[helpers[i].name] {
			for _, u := range helpers[i].uses {
				need[u] = true
			}
		}
	}
	var out []string
	for _, h := range helpers {
		if need[h.name] {
			out = append(out, h.src)
		}
	}
	return strings.Join(out, "\n\n\n")
}

// moduleImports are the import lines for the names body uses.
func moduleImports(body string) string {
	ids := map[string]bool{}
	for _, id := range pyIdents(body) {
		ids[id] = true
	}
	var std, third []string
	if ids["functools"] {
		std = append(std, "import functools")
	}
	if ids["itertools"] {
		std = append(std, "import itertools")
	}
	if ids["math"] {
		std = append(std, "import math")
	}
	third = append(third, "import jax")
	if ids["jnp"] {
		third = append(third, "import jax.numpy as jnp")
	}
	if ids["np"] {
		third = append(third, "import numpy as np")
	}
	if ids["lax"] {
		third = append(third, "from jax import lax")
	}
	if ids["pl"] {
		third = append(third, "from jax.experimental import pallas as pl")
	}
	if ids["pltpu"] {
		third = append(third, "from jax.experimental.pallas import tpu as pltpu")
	}
	sort.Strings(std)
	s := strings.Join(third, "\n")
	if len(std) > 0 {
		s = strings.Join(std, "\n") + "\n\n" + s
	}
	return s
}

// storeValue is v as the block a store through ref writes: a uniform value
// fills the block, anything else is cast to the ref's dtype unless it is
// float32 already.
func storeValue(ref string, v val, dtype string) string {
	if v.k == kUniform {
		return "jnp.full(" + ref + ".shape, " + v.py + ", " + ref + ".dtype)"
	}
	if dtype == "jnp.float32" && isFloat(v.ct) {
		return v.py
	}
	if isName(v.py) {
		return v.py + ".astype(" + ref + ".dtype)"
	}
	return "(" + v.py + ").astype(" + ref + ".dtype)"
}
