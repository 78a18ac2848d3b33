import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = 256


def run(args, *, interpret):
    return {"out": pl.pallas_call(None, out_shape=None, no_such_keyword=1)(args["x"])}
