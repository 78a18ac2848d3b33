import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = 256


while True:
    pass


def run(args, *, interpret):
    return {}
