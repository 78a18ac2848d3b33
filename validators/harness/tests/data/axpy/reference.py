import numpy as np


def reference(args):
    x, y = args["x"], args["y"]
    return {"out": (np.float32(args["alpha"]) * x + y).astype(np.float32)}
