# A wired Pallas kernel: jax_op over a JAX function whose pallas_call is written for the TPU
# (interpret=False), reached the way pallasify's generated ops modules reach it.
import functools

import jax
import torch
from jax.experimental import pallas as pl


def _kernel(x_ref, o_ref, *, scale):
    o_ref[...] = x_ref[...] * scale


def scaled_jax(x: jax.Array, scale: float, *, interpret: bool = False) -> jax.Array:
    return pl.pallas_call(
        functools.partial(_kernel, scale=scale),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        interpret=interpret,
    )(x)


def _jax_op():
    import torch_tpu  # noqa: F401

    try:
        return torch.tpu.pallas.jax_op
    except AttributeError:
        from torch_tpu._internal.pallas import jax_op

        return jax_op


op = _jax_op()("fixture_pallas::scaled", scaled_jax)
x = torch.arange(8 * 128, dtype=torch.float32, device="tpu").reshape(8, 128)
y = op(x, 3.0)
print("device", y.device.type)
print("equal", torch.equal(y.cpu(), x.cpu() * 3.0))
y = op(x, 0.5)
print("meta", tuple(op(torch.empty(8, 128, device="meta"), 2.0).shape))
