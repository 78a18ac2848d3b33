from jax.experimental import pallas as pl

while True:
    pass


def run(args, *, interpret):
    return {"out": pl.pallas_call}
