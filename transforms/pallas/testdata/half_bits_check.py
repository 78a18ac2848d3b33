"""Checks the drafts' float16 bit helpers (_h2f, _f2h; their source is the file given) against
numpy's float16 conversion: every one of the 65536 float16 bit patterns through the decoder,
and through the encoder every float16 value, every midpoint between neighbours (the ties),
the float32 neighbours of each midpoint, the overflow and subnormal boundaries, inf, NaN and
a stripe of float32 bit patterns over every exponent; both in Pallas TPU interpret mode. Then,
with --compile, both helpers in one kernel lowered by Mosaic and compiled deviceless for
v5e, v6e and TPU7x. Prints one line per check; exits 1 on any difference or failure."""

import os
import sys

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402

TOPOLOGIES = {"v5e": "v5e:2x2", "v6e": "v6e:2x2", "tpu7x": "tpu7x:2x2x1"}


def helpers(path):
    ns = {"jnp": jnp, "lax": lax}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), ns)
    return ns["_h2f"], ns["_f2h"]


def same_bits(got, want, view):
    """Equal bit for bit, or both NaN (the NaN's payload is not a value)."""
    return (got.view(view) == want.view(view)) | (np.isnan(got) & np.isnan(want))


def encoder_inputs():
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    values = np.unique(every[np.isfinite(every)].astype(np.float64))
    mids = ((values[:-1] + values[1:]) / 2).astype(np.float32)  # exact in float32
    edges = [
        65504,
        65519.99,
        65520,
        65520.01,
        1e9,
        np.inf,
        -np.inf,
        np.nan,
        -np.nan,
        0.0,
        -0.0,
        2.0**-25,
        2.0**-25 * 1.0000001,
        2.0**-24,
        1.5 * 2.0**-24,
        2.0**-14,
        2.0**-14 * (1 - 2.0**-11),
        3e-45,
        1e-40,
        -1e-40,
    ]
    stripe = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    rng = np.random.default_rng(0)
    scaled = rng.standard_normal(1 << 18) * 10.0 ** rng.integers(-9, 6, 1 << 18)
    parts = [
        values,
        mids,
        np.nextafter(mids, np.float32(np.inf)),
        np.nextafter(mids, np.float32(-np.inf)),
        np.array(edges),
        stripe,
        scaled,
    ]
    x = np.concatenate([np.asarray(p, np.float32) for p in parts])
    return np.concatenate([x, np.zeros((-len(x)) % 1024, np.float32)]).reshape(-1, 128)


def elementwise(fn, x, out_dtype):
    def kernel(x_ref, o_ref):
        o_ref[...] = fn(x_ref[...])

    out = jax.ShapeDtypeStruct(x.shape, out_dtype)
    return np.asarray(pl.pallas_call(kernel, out_shape=out, interpret=True)(jnp.asarray(x)))


def check_interpret(h2f, f2h):
    ok = True
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.int16).reshape(-1, 128)
    want = bits.view(np.float16).astype(np.float32)
    bad = int((~same_bits(elementwise(h2f, bits, jnp.float32), want, np.uint32)).sum())
    print(f"_h2f: {bits.size} float16 bit patterns, {bad} differ from numpy")
    ok = ok and bad == 0
    x = encoder_inputs()
    with np.errstate(over="ignore"):
        want_h = x.astype(np.float16)
    got_h = elementwise(f2h, x, jnp.int16).view(np.float16)
    miss = ~same_bits(got_h, want_h, np.uint16)
    print(f"_f2h: {x.size} float32 values, {int(miss.sum())} differ from numpy")
    for v, g, w in list(zip(x[miss], got_h[miss], want_h[miss], strict=True))[:5]:
        print(f"  {v!r}: got {g!r}, numpy {w!r}")
    return ok and not miss.any()


def check_compile(h2f, f2h):
    from jax.experimental import topologies

    def kernel(h_ref, o_ref):
        o_ref[...] = f2h(h2f(h_ref[...]) * 3.0)

    def f(h):
        spec = pl.BlockSpec((16, 128), lambda i: (i, 0))
        out = jax.ShapeDtypeStruct(h.shape, jnp.int16)
        return pl.pallas_call(
            kernel, out_shape=out, grid=(h.shape[0] // 16,), in_specs=[spec], out_specs=spec
        )(h)

    ok = True
    for chip, topo in TOPOLOGIES.items():
        dev = topologies.get_topology_desc(topo, "tpu").devices[0]
        arg = jax.ShapeDtypeStruct((512, 128), jnp.int16, sharding=jax.sharding.SingleDeviceSharding(dev))
        try:
            with jax.default_device(dev):
                jax.jit(f).lower(arg).compile()
            print(f"{chip}: compiled")
        except Exception as e:  # noqa: BLE001 - the compiler's refusal is the result
            print(f"{chip}: does not compile: {str(e).splitlines()[0][:300]}")
            ok = False
    return ok


def main(argv):
    h2f, f2h = helpers(argv[0])
    ok = check_interpret(h2f, f2h)
    if "--compile" in argv[1:]:
        ok = check_compile(h2f, f2h) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
