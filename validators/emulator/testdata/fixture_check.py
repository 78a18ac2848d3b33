"""Run a fixture kernel's reference library (ref.so, built by the emulator)
through the pallasify_launch ABI over its spec's sweep and compare with the
fixture's NumPy reference. Usage: fixture_check.py spec.json ref.so reference.py
Prints one line per case; exits 1 on the first mismatch."""
import ctypes
import importlib.util
import json
import sys

import numpy as np

DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int32": np.int32,
          "int64": np.int64, "uint32": np.uint32, "uint8": np.uint8, "bool": np.bool_}
CTYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
          "uint32": ctypes.c_uint32, "uint8": ctypes.c_uint8, "bool": ctypes.c_bool}


def ev(expr, env):
    # C integer arithmetic on non-negative sizes: '/' truncates.
    return int(eval(str(expr).replace("/", "//"), {"__builtins__": {}, "min": min, "max": max}, dict(env)))


def main():
    spec = json.load(open(sys.argv[1]))
    lib = ctypes.CDLL(sys.argv[2])
    lib.pallasify_launch.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong), ctypes.c_char_p, ctypes.c_int]
    lib.pallasify_kernel_name.restype = ctypes.c_char_p
    mod_spec = importlib.util.spec_from_file_location("fixture_reference", sys.argv[3])
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    cases = 0
    for sizes in spec["domain"]["sweep"]:
        for seed in (1, 2):
            rng = np.random.default_rng(seed)
            args, keep, ptrs = {}, [], []
            for p in spec["params"]:
                dt = p["dtype"]
                if p["kind"] == "pointer":
                    shape = tuple(ev(e, sizes) for e in p["shape"])
                    if p["role"] == "output":
                        a = np.full(shape, np.nan if np.issubdtype(DTYPES[dt], np.floating) else -7, dtype=DTYPES[dt])
                    elif p.get("int_range"):
                        lo, hi = p["int_range"]
                        a = rng.integers(lo, hi, size=shape).astype(DTYPES[dt])
                    else:
                        a = rng.standard_normal(shape).astype(DTYPES[dt])
                    a = np.ascontiguousarray(a)
                    args[p["name"]] = a
                    keep.append(a)
                    ptrs.append(a.ctypes.data)
                else:
                    if p.get("expr"):
                        v = ev(p["expr"], sizes)
                    elif p.get("value") is not None:
                        v = p["value"]
                    elif p.get("range"):
                        v = float(rng.uniform(*p["range"]))
                    else:
                        v = 1
                    c = CTYPES[dt](v)
                    args[p["name"]] = c.value
                    keep.append(c)
                    ptrs.append(ctypes.addressof(c))
            before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
            ref = mod.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
            launch = [ev(e, sizes) for e in spec["launch"]["grid"]] + [ev(e, sizes) for e in spec["launch"]["block"]]
            launch.append(ev(spec["launch"]["shared_bytes"], sizes))
            err = ctypes.create_string_buffer(1024)
            rc = lib.pallasify_launch((ctypes.c_void_p * len(ptrs))(*ptrs), (ctypes.c_longlong * 7)(*launch), err, 1024)
            if rc != 0:
                print(f"FAIL {spec['id']} {sizes} seed {seed}: launch: {err.value.decode()}")
                return 1
            L = max(1, ev(spec["reduction_length"], sizes)) if spec.get("reduction_length") else 1
            for p in spec["params"]:
                name = p["name"]
                if p["kind"] != "pointer":
                    continue
                if p["role"] == "input":
                    if not np.array_equal(args[name], before[name], equal_nan=True):
                        print(f"FAIL {spec['id']} {sizes}: input {name} modified")
                        return 1
                    continue
                got = args[name].astype(np.float64)
                want = np.asarray(ref[name]).astype(np.float64)
                tol = 1e-5 * L * (1.0 + np.abs(want))
                bad = ~(np.abs(got - want) <= tol)
                if bad.any():
                    idx = np.argwhere(bad)[0]
                    print(f"FAIL {spec['id']} {sizes} seed {seed}: {name}{tuple(idx)} got {got[tuple(idx)]!r} want {want[tuple(idx)]!r} ({int(bad.sum())} mismatches)")
                    return 1
            cases += 1
    print(f"OK {lib.pallasify_kernel_name().decode()} {cases} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
