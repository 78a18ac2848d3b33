import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = 256


def run(args, *, interpret):
    return {"out": args["alpha"] * args["x"] + args["y"]}
