"""Import every module given and check that each pl./pltpu./jnp./lax./jax.
attribute chain it uses exists in the installed JAX. Prints one line per
missing attribute and exits 1 if there is any."""
import ast
import os
import importlib.util
import sys

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROOTS = {"pl": pl, "pltpu": pltpu, "jnp": jnp, "lax": lax, "jax": jax}


def chains(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = []
            cur = node
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name) and cur.id in ROOTS:
                yield cur.id, list(reversed(parts))


def main(paths):
    bad = 0
    for path in paths:
        src = open(path).read()
        tree = ast.parse(src)
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        spec = importlib.util.spec_from_file_location("m_" + str(abs(hash(path))), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        seen = set()
        for root, parts in chains(tree):
            obj = ROOTS[root]
            for i, p in enumerate(parts):
                key = root + "." + ".".join(parts[: i + 1])
                if key in seen:
                    obj = getattr(obj, p, None)
                    continue
                seen.add(key)
                if not hasattr(obj, p):
                    print(f"{path}: {key} does not exist in jax {jax.__version__}")
                    bad += 1
                    break
                obj = getattr(obj, p)
                if not (hasattr(obj, "__dict__") or callable(obj)) :
                    break
        print(f"{path}: {len(seen)} attributes checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
