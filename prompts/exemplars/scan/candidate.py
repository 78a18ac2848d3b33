"""Pallas TPU draft of row_cumsum_kernel (inclusive scan along rows).

No per-thread sequential loop: a (8, 128) block's inclusive scan is one MXU
matmul with an upper-triangular ones matrix, and the running total of each
row is carried across column blocks in an f32 VMEM scratch along the last,
"arbitrary" grid axis (reset at j == 0). Zero padding leaves sums unchanged.
"""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS = 8
LANES = 128


def _round_up(v, m):
    return (v + m - 1) // m * m


def _kernel(x_ref, y_ref, carry_ref):
    @pl.when(pl.program_id(1) == 0)
    def _init():
        carry_ref[...] = jnp.zeros_like(carry_ref)

    r = lax.broadcasted_iota(jnp.int32, (LANES, LANES), 0)
    c = lax.broadcasted_iota(jnp.int32, (LANES, LANES), 1)
    upper = (r <= c).astype(jnp.float32)
    x = x_ref[...].astype(jnp.float32)
    s = jnp.dot(x, upper, precision=lax.Precision.HIGHEST, preferred_element_type=jnp.float32)
    s = s + carry_ref[...]
    y_ref[...] = s.astype(y_ref.dtype)
    carry_ref[...] = s[:, LANES - 1:LANES]


def run(args, *, interpret):
    x = args["x"]
    rows, cols = x.shape
    rp, cp = _round_up(rows, ROWS), _round_up(cols, LANES)
    xp = jnp.pad(x, ((0, rp - rows), (0, cp - cols)))
    spec = pl.BlockSpec((ROWS, LANES), lambda i, j: (i, j))
    y = pl.pallas_call(
        _kernel,
        grid=(rp // ROWS, cp // LANES),
        in_specs=[spec],
        out_specs=spec,
        out_shape=jax.ShapeDtypeStruct((rp, cp), x.dtype),
        scratch_shapes=[pltpu.VMEM((ROWS, 1), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        interpret=interpret,
    )(xp)
    return {"y": y[:rows, :cols]}
