"""Checks maxpool_loop's draft at shapes of one's choosing: its output against numpy's strided
windows (interpret mode), then compiled deviceless for v6e, its bytes accessed against the layout
minimum (each array's operand bytes in a program that reads it once, as the TPU compile gate
measures them) and the layouts XLA gives the entry parameter and result.

usage: layout_check.py draft.golden.py [CHANNELS,H,W,K,S ...]   (default 8,65,129,5,3)"""

import os
import sys

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import topologies  # noqa: E402

ns = {}
exec(open(sys.argv[1]).read(), ns)  # noqa: S102 - the draft under test
run = ns["run"]
dev = topologies.get_topology_desc("v6e:2x2", "tpu").devices[0]
sharding = jax.sharding.SingleDeviceSharding(dev)


def struct(shape):
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)


def operand_bytes(compiled, keys):
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return sum(float(v) for k, v in cost.items() if k in keys)


def all_bytes(compiled):
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return sum(
        float(v)
        for k, v in cost.items()
        if k.startswith("bytes accessed") and k != "bytes accessed"
    )


def layout_min(shape):
    with jax.default_device(dev):
        return operand_bytes(
            jax.jit(jnp.negative).lower(struct(shape)).compile(), {"bytes accessed0{}"}
        )


failures = 0
shapes = [tuple(int(v) for v in a.split(",")) for a in sys.argv[2:]] or [(8, 65, 129, 5, 3)]
for c, h, w, k, s in shapes:
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    x = np.random.default_rng(c * h * w).standard_normal((c, h, w)).astype(np.float32)
    args = {
        "input_height": h,
        "input_width": w,
        "pool_height": k,
        "pool_width": k,
        "stride": s,
        "output_height": oh,
        "output_width": ow,
    }
    want = np.full((c, oh, ow), -np.inf, np.float32)
    for r in range(k):
        for q in range(k):
            want = np.maximum(want, x[:, r : r + s * oh : s, q : q + s * ow : s][:, :oh, :ow])
    got = np.asarray(run({"input": jnp.asarray(x), **args}, interpret=True)["output"])
    bad = int((got != want).sum())
    failures += bad > 0
    with jax.default_device(dev):
        compiled = (
            jax.jit(lambda a, args=args: run({"input": a, **args}, interpret=False))
            .lower(struct((c, h, w)))
            .compile()
        )
    b = all_bytes(compiled)
    lm = layout_min((c, h, w)) + layout_min((c, oh, ow))
    entry = compiled.as_text().split("entry_computation_layout={")[1].split("}, ")[0]
    print(
        f"{(c, h, w, k, s)}: mismatches {bad}, bytes accessed {b:.0f}, layout minimum {lm:.0f}, "
        f"{b / lm:.2f}x; XLA's layouts {entry}"
    )
print(f"{failures} failures")
sys.exit(1 if failures else 0)
