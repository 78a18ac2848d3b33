import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = 256


from jax.experimental.pallas import tpu as pltpu


def _kernel(x_ref, y_ref, o_ref, s_ref, *, alpha):
    # Reads scratch memory it never wrote: the result depends on the poison.
    junk = s_ref[...]
    good = alpha * x_ref[...] + y_ref[...]
    o_ref[...] = jnp.where(jnp.isnan(junk), good, good * (1.0 + 2.0**-22))


def run(args, *, interpret):
    x, y = args["x"], args["y"]
    n = x.shape[0]
    spec = pl.BlockSpec((BLOCK,), lambda i: (i,))
    out = pl.pallas_call(functools.partial(_kernel, alpha=args["alpha"]), out_shape=jax.ShapeDtypeStruct((n,), x.dtype),
                         grid=(pl.cdiv(n, BLOCK),), in_specs=[spec, spec], out_specs=spec,
                         scratch_shapes=[pltpu.VMEM((BLOCK,), jnp.float32)], interpret=interpret)(x, y)
    return {"out": out}
