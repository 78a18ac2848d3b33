import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = 256


import os


def run(args, *, interpret):
    os.system("true")
    return {}
