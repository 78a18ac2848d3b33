"""Checks the plane helpers (_plane, _plane_stage, _window_read) a window draft uses: _plane's
strides, offsets and refusals on addresses of known form, and _window_read's windows against
numpy's strided slices in interpret mode (planes over 128 lanes and windows over 128 rows: several
chunks), then compiled by Mosaic for v5e, v6e and TPU7x with --compile.

usage: plane_check.py HELPERS.py [--compile]"""

import os
import sys

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import tpu as pltpu  # noqa: E402

ns = {"jax": jax, "jnp": jnp, "pl": pl, "pltpu": pltpu}
exec(open(sys.argv[1]).read(), ns)  # noqa: S102 - the helpers under test
_plane, _plane_scratch = ns["_plane"], ns["_plane_scratch"]
_plane_stage, _window_read = ns["_plane_stage"], ns["_window_read"]
_plane_view, _plane_layout = ns["_plane_view"], ns["_plane_layout"]


def addresses(h, w, sy, sx, offs, ext):
    """The addresses z * h * w + (sy * y + r) * w + sx * x + c at d = 0, 1, ex, ex * ey."""
    ez, ey, ex = ext
    out = []
    for d in (0, 1, ex, ex * ey):
        x, y, z = d % ex, (d // ex) % ey, d // ex // ey
        out.append([z * h * w + (sy * y + r) * w + sx * x + c for r, c in offs])
    return out


failures = 0


def expect(name, got, want):
    global failures
    ok = got == want
    failures += not ok
    print(f"{name}: {'ok' if ok else f'got {got}, want {want}'}")


# max pooling (8, 65, 129), k 5, s 3: output (21, 42)
offs = [(r, c) for r in range(5) for c in range(5)]
expect(
    "maxpool",
    _plane((8, 65, 129), addresses(65, 129, 3, 3, offs, (8, 21, 42)), (8, 21, 42)),
    (3, 3, tuple(offs)),
)
# the last window column one past the plane: the gathers
expect(
    "column out of the plane",
    _plane((8, 65, 129), addresses(65, 129, 3, 3, offs, (8, 21, 43)), (8, 21, 43)),
    None,
)
expect(
    "row out of the plane",
    _plane((8, 65, 129), addresses(65, 129, 3, 3, offs, (8, 22, 42)), (8, 22, 42)),
    None,
)
# a y step not whole rows, a z step not the plane, a 1-D array, more planes than the array has
bad = addresses(65, 129, 3, 3, offs, (8, 21, 42))
bad[2] = [a + 1 for a in bad[0]]
expect("y step not whole rows", _plane((8, 65, 129), bad, (8, 21, 42)), None)
bad = addresses(65, 129, 3, 3, offs, (8, 21, 42))
bad[3] = [a + 65 * 129 + 1 for a in bad[0]]
expect("z step not the plane", _plane((8, 65, 129), bad, (8, 21, 42)), None)
expect(
    "1-D array",
    _plane((8 * 65 * 129,), addresses(65, 129, 3, 3, offs, (8, 21, 42)), (8, 21, 42)),
    None,
)
expect(
    "more planes than the array",
    _plane((8, 65, 129), addresses(65, 129, 3, 3, offs, (9, 21, 42)), (9, 21, 42)),
    None,
)
expect("no iterations", _plane((8, 65, 129), [[], [], [], []], (8, 21, 42)), None)
expect(
    "over the VMEM budget",
    _plane((2, 2048, 2048), addresses(2048, 2048, 1, 1, [(0, 0)], (2, 4, 4)), (2, 4, 4)),
    None,
)

# the order of (planes, rows, cols) XLA keeps an array in (v6e, libtpu 0.0.52: the entry layouts
# of maxpool_loop's draft at these shapes, testdata/maxpool_loop/layout_check.py): (8, 65, 129) is
# {1,0,2}, (8, 21, 42) {2,0,1}, (5, 65, 129) {1,2,0}, (4, 198, 5) {1,0,2}, (256, 7, 7) {0,2,1}
# (the planes' index minor: read row-major), and a plane that is not the array's last two dims
for shape, plane, want in [
    ((8, 65, 129), (65, 129), (2, 0, 1)),
    ((8, 21, 42), (21, 42), (1, 0, 2)),
    ((5, 65, 129), (65, 129), (0, 2, 1)),
    ((64, 128, 128), (128, 128), (0, 1, 2)),
    ((4, 198, 5), (198, 5), (2, 0, 1)),
    ((256, 7, 7), (7, 7), (0, 1, 2)),
    ((8, 21, 42), (21, 43), (0, 1, 2)),
    ((1023, 1025), (1023, 1025), (0, 2, 1)),
]:
    expect(f"view {shape}", _plane_view(shape, plane), want)
# blocks of 8 planes where an array keeps the planes' index second-minor, one plane a step
# where none does, and the row-major fallback when the kernel reads the z coordinate or the
# blocks pass the VMEM budget
for args, want in [
    (((8, 65, 129), [(8, 21, 42)], (8, 21, 42), True), (8, [(2, 0, 1), (1, 0, 2)])),
    (((16, 65, 129), [(16, 21, 42)], (16, 21, 42), True), (8, [(2, 0, 1), (1, 0, 2)])),
    (((5, 65, 129), [(5, 32, 64)], (5, 32, 64), True), (1, [(0, 2, 1), (0, 1, 2)])),
    (((8, 65, 129), [(8, 21, 42)], (8, 21, 42), False), (1, [(0, 1, 2), (0, 1, 2)])),
    (((8, 2000, 129), [(8, 666, 42)], (8, 666, 42), True), (1, [(0, 1, 2), (0, 1, 2)])),
]:
    expect(f"layout {args}", _plane_layout(*args), want)


def windows(x, plane, ext, interpret):
    """Every iteration's window of every plane of x, by _window_read in a kernel."""
    ez, ey, ex = ext
    n = len(plane[2])

    def kernel(x_ref, o_ref, *scratch):
        held = _plane_stage(x_ref, scratch, plane)
        for it in range(n):
            o_ref[it], held = _window_read(x_ref, scratch, plane, it, (ey, ex), held)

    hw = x.shape[-2:]
    return pl.pallas_call(
        kernel,
        grid=(ez,),
        in_specs=[pl.BlockSpec((None, *hw), lambda i: (i, 0, 0))],
        out_specs=pl.BlockSpec((None, n, ey, ex), lambda i: (i, 0, 0, 0)),
        out_shape=jax.ShapeDtypeStruct((ez, n, ey, ex), x.dtype),
        scratch_shapes=_plane_scratch(hw, ey, x.dtype),
        interpret=interpret,
    )(x)


cases = [
    # (planes, h, w, sy, sx, offsets, ey, ex): one chunk, 300 lanes, a window of 130 rows
    (2, 17, 33, 2, 3, [(0, 0), (1, 2), (2, 1)], 8, 10),
    (2, 65, 300, 1, 2, [(0, 0), (3, 5), (1, 7)], 60, 140),
    (1, 140, 200, 1, 1, [(0, 0), (9, 60), (4, 3)], 130, 100),
]
for planes, h, w, sy, sx, offs, ey, ex in cases:
    x = jax.random.normal(jax.random.key(h * w), (planes, h, w), jnp.float32)
    plane = _plane(x.shape, addresses(h, w, sy, sx, offs, (planes, ey, ex)), (planes, ey, ex))
    name = f"windows ({planes}, {h}, {w}) s ({sy}, {sx}) out ({ey}, {ex})"
    if plane is None:
        expect(name, "refused", "a plane")
        continue
    got = np.asarray(windows(x, plane, (planes, ey, ex), True))
    xn = np.asarray(x)
    want = np.stack(
        [
            np.stack([xn[z, r : r + sy * ey : sy, c : c + sx * ex : sx] for r, c in offs])
            for z in range(planes)
        ]
    )
    expect(name, int((got != want).sum()), 0)
    if "--compile" in sys.argv:
        for chip, topo in (("v5e", "v5e:2x2"), ("v6e", "v6e:2x2"), ("tpu7x", "tpu7x:2x2x1")):
            from jax.experimental import topologies

            dev = topologies.get_topology_desc(topo, "tpu").devices[0]
            s = jax.ShapeDtypeStruct(
                x.shape, x.dtype, sharding=jax.sharding.SingleDeviceSharding(dev)
            )
            try:
                with jax.default_device(dev):
                    jax.jit(lambda a, p=plane, e=(planes, ey, ex): windows(a, p, e, False)).lower(
                        s
                    ).compile()
                print(f"{name} {chip}: compiled")
            except Exception as e:  # noqa: BLE001 - the compiler's refusal is the finding
                failures += 1
                print(f"{name} {chip}: FAILED {str(e).splitlines()[0][:300]}")
print(f"{failures} failures")
sys.exit(1 if failures else 0)
