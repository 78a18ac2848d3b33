# pallasify op driver (generated from pipeline/drive_driver.py)
#
# Calls each op an extension exports with inputs synthesised from its C++
# signature, adjusting them when a host check (TORCH_CHECK, AT_ASSERT,
# assert) rejects them, under the capture runtime (validators/hostbuild
# pyrt), so that every launch is recorded. Writes what each op did to
# <capture dir>/drive.json. The configuration below is written by the
# capture stage (pipeline/drive.go).
import json
import os
import re
import sys
import time

import torch

CONFIG = json.loads({{.Config}})

DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
    "int64": torch.int64, "int32": torch.int32, "uint8": torch.uint8, "int8": torch.int8, "bool": torch.bool,
}
# at::kHalf, at::ScalarType::Half, torch::kFloat32, at::kFloat ... -> dtype
CPP_DTYPES = {
    "half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32", "float32": "float32",
    "double": "float64", "float64": "float64", "long": "int64", "int64": "int64", "int": "int32", "int32": "int32",
    "byte": "uint8", "uint8": "uint8", "char": "int8", "int8": "int8", "bool": "bool",
}
DEFAULT_DIMS = {0: [], 1: [96], 2: [6, 40], 3: [2, 6, 40], 4: [2, 3, 5, 8], 5: [2, 3, 2, 4, 5]}


def dims_for(rank):
    if rank in DEFAULT_DIMS:
        return list(DEFAULT_DIMS[rank])
    return [2] * rank


class Arg:
    def __init__(self, p):
        self.name, self.kind = p["name"], p["kind"]
        self.rank = p.get("rank") or (2 if self.kind in ("tensor", "tensors") else 0)
        self.dims = dims_for(self.rank)
        self.dtype = "float32"
        self.value = p.get("value")

    def make(self, gen, dtype_override=None, strided=False):
        if self.kind == "none":
            return None
        if self.kind in ("int", "float", "bool", "str"):
            return self.value
        if self.kind == "ints":
            return list(self.value)
        t = self.tensor(gen, dtype_override, strided)
        if self.kind == "tensors":
            return [t, self.tensor(gen, dtype_override, strided)]
        return t

    def tensor(self, gen, dtype_override, strided):
        dt = DTYPES[self.dtype]
        if dtype_override is not None and dt.is_floating_point:
            dt = dtype_override
        dims = list(self.dims)
        if strided and dims:
            dims[-1] *= 2
        if dt.is_floating_point:
            t = torch.randn(dims, generator=gen, dtype=torch.float32).to(dt)
        elif dt == torch.bool:
            t = torch.randint(0, 2, dims, generator=gen).to(dt)
        else:
            t = torch.randint(0, 4, dims, generator=gen).to(dt)
        t = t.cuda()
        if strided and dims:
            t = t[..., ::2]  # a non-contiguous view of a larger tensor
        return t


NAME = r"([A-Za-z_]\w*)"
INT = r"(-?\d+)"


def dtype_of(text):
    m = re.search(r"(?:k|ScalarType::)(\w+)\s*$", text.strip())
    if not m:
        return None
    return CPP_DTYPES.get(m.group(1).lower())


def apply(cond, args):
    """Changes args so that cond holds; returns whether anything changed."""
    cond = cond.strip()
    while cond.startswith("(") and cond.endswith(")"):
        cond = cond[1:-1].strip()
    if "&&" in cond:
        changed = False
        for part in cond.split("&&"):
            changed = apply(part, args) or changed
        return changed
    cond = re.sub(r"\.device\(\)\.is_cuda\(\)|\.is_cuda\(\)|\.is_contiguous\(\)", ".ok()", cond)
    byname = {a.name: a for a in args}

    def tensor(n):
        a = byname.get(n)
        return a if a is not None and a.kind in ("tensor", "tensors") else None

    def set_rank(a, r):
        if a.rank == r:
            return False
        a.rank, a.dims = r, dims_for(r)
        return True

    def size(a, i):
        i = int(i)
        return i + len(a.dims) if i < 0 else i

    m = re.fullmatch(NAME + r"\.(?:dim|ndimension)\(\)\s*(==|>=|>|<=|<)\s*" + INT, cond) or \
        re.fullmatch(NAME + r"\.sizes\(\)\.size\(\)\s*(==|>=|>|<=|<)\s*" + INT, cond)
    if m and tensor(m.group(1)):
        a, op, n = tensor(m.group(1)), m.group(2), int(m.group(3))
        want = {"==": n, ">=": max(a.rank, n), ">": max(a.rank, n + 1), "<=": min(a.rank, n), "<": min(a.rank, n - 1)}[op]
        return set_rank(a, want)
    m = re.fullmatch(NAME + r"\.(?:size|sizes\(\)\.at|sizes\(\)\[)\(?" + INT + r"[\)\]]\s*(==|%\s*\d+\s*==\s*0|<=|<|>=|>)\s*(.+)", cond)
    if m and tensor(m.group(1)):
        a, i, op, rhs = tensor(m.group(1)), m.group(2), m.group(3), m.group(4).strip()
        if size(a, i) >= len(a.dims):
            set_rank(a, size(a, i) + 1)
        i = size(a, i)
        if op.startswith("%"):
            k = int(re.search(r"\d+", op).group(0))
            new = max(k, (a.dims[i] + k - 1) // k * k)
        else:
            m2 = re.fullmatch(NAME + r"\.size\(" + INT + r"\)", rhs)
            if m2 and tensor(m2.group(1)):
                b = tensor(m2.group(1))
                j = size(b, m2.group(2))
                if j >= len(b.dims):
                    return False
                new = b.dims[j]
            elif re.fullmatch(INT, rhs):
                n = int(rhs)
                new = {"==": n, "<=": min(a.dims[i], n), "<": min(a.dims[i], n - 1), ">=": max(a.dims[i], n),
                       ">": max(a.dims[i], n + 1)}[op]
            else:
                return False
        if new == a.dims[i] or new < 0:
            return False
        a.dims[i] = new
        return True
    m = re.fullmatch(NAME + r"\.(?:sizes\(\)|numel\(\))\s*==\s*" + NAME + r"\.(?:sizes\(\)|numel\(\))", cond)
    if m and tensor(m.group(1)) and tensor(m.group(2)):
        a, b = tensor(m.group(1)), tensor(m.group(2))
        if a.dims == b.dims:
            return False
        a.rank, a.dims = b.rank, list(b.dims)
        return True
    m = re.fullmatch(NAME + r"\.(?:scalar_type|dtype)\(\)\s*==\s*(.+)", cond)
    if m and tensor(m.group(1)):
        a, rhs = tensor(m.group(1)), m.group(2).strip()
        m2 = re.fullmatch(NAME + r"\.(?:scalar_type|dtype)\(\)", rhs)
        want = tensor(m2.group(1)).dtype if m2 and tensor(m2.group(1)) else dtype_of(rhs)
        if want is None or want == a.dtype:
            return False
        a.dtype = want
        return True
    return False


def failed_check(msg, checks):
    """The host check a failure message comes from: (condition, its text)."""
    m = re.search(r"Expected (.+?) to be true, but got false", msg)
    if m:
        return m.group(1), m.group(1)
    best = None
    for c in checks:
        text = c.get("message") or ""
        if text and text in msg and (best is None or len(text) > len(best.get("message") or "")):
            best = c
    if best:
        return best["cond"], best["message"]
    m = re.search(r"Assertion `(.+?)' failed", msg)
    if m:
        return m.group(1), m.group(1)
    return None, None


INDEX_NAMES = ("idx", "ind", "label", "target", "mask", "order", "keep", "count", "offset")


def retype(msg, args, retyped):
    """A data_ptr<T>() of the wrong dtype ("expected scalar type Int but
    found Float") names no tensor: the next float tensor not yet retyped,
    index-like names first, takes the expected dtype."""
    m = re.search(r"expected scalar type (\w+) but found (\w+)", msg)
    if not m:
        return False
    want, found = CPP_DTYPES.get(m.group(1).lower()), CPP_DTYPES.get(m.group(2).lower())
    if want is None:
        return False
    cands = [a for a in args if a.kind == "tensor" and a.dtype == found and a.name not in retyped]
    cands.sort(key=lambda a: not any(k in a.name.lower() for k in INDEX_NAMES))
    if not cands:
        return False
    cands[0].dtype = want
    retyped.add(cands[0].name)
    return True


def first_line(e):
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:300]


def drive(op, fn, checks, deadline):
    args = [Arg(p) for p in op["params"]]
    gen = torch.Generator().manual_seed(0)
    rec = {"op": op["name"], "status": "failed", "variants": [], "tries": 0}
    seen, retyped = set(), set()
    for _ in range(CONFIG["max_tries"]):
        if time.monotonic() > deadline:
            rec.update(code="CAP-DRIVE-BUDGET", error="the op's time budget ran out")
            return rec
        rec["tries"] += 1
        try:
            fn(*[a.make(gen) for a in args])
        except Exception as e:  # a host check, a signature mismatch, an emulator error
            msg = first_line(e)
            if isinstance(e, TypeError) and "incompatible function arguments" in str(e):
                rec.update(code="CAP-DRIVE-SIGNATURE", error=msg)
                return rec
            cond, text = failed_check(str(e), checks)
            if cond is None and retype(str(e), args, retyped):
                rec.setdefault("adjusted", []).append(msg)
                continue
            if cond is None:
                rec.update(code="CAP-DRIVE-FAILED", error=msg)
                return rec
            if (cond, repr([(a.rank, a.dims, a.dtype) for a in args])) in seen or not apply(cond, args):
                rec.update(code="CAP-DRIVE-CHECK", error=msg, check=cond)
                return rec
            seen.add((cond, repr([(a.rank, a.dims, a.dtype) for a in args])))
            rec.setdefault("adjusted", []).append(cond)
            continue
        rec["status"] = "ok"
        rec["variants"].append(next((a.dtype for a in args if a.kind in ("tensor", "tensors")), "scalars"))
        rec.pop("code", None)
        rec.pop("error", None)
        break
    else:
        rec.update(code="CAP-DRIVE-CHECK", error="still rejected after %d tries" % CONFIG["max_tries"])
        return rec
    # the dtypes the host code dispatches on, then a non-contiguous view
    for name in op.get("dtypes") or []:
        if time.monotonic() > deadline:
            break
        try:
            fn(*[a.make(gen, DTYPES[name]) for a in args])
            rec["variants"].append(name)
        except Exception as e:
            rec.setdefault("refused", []).append(name + ": " + first_line(e))
    if any(a.kind == "tensor" and a.dims for a in args) and time.monotonic() <= deadline:
        try:
            fn(*[a.make(gen, None, strided=True) for a in args])
            rec["variants"].append("strided")
        except Exception as e:
            rec.setdefault("refused", []).append("strided: " + first_line(e))
    return rec


def load_module(ext):
    if ext.get("inline"):
        from torch.utils.cpp_extension import load_inline

        i = ext["inline"]
        return load_inline(name=i["name"], cpp_sources=i["cpp"], cuda_sources=i["cuda"], functions=i["functions"])
    import importlib

    return importlib.import_module(ext["module"])


def main():
    out = os.path.join(os.environ.get("PALLASIFY_CAPTURE_DIR") or ".", "drive.json")
    recs = []
    start = time.monotonic()
    try:
        mod = load_module(CONFIG)
    except Exception as e:
        recs = [{"op": op["name"], "status": "failed", "code": "CAP-DRIVE-IMPORT", "error": first_line(e)}
                for op in CONFIG["ops"]]
        mod = None
    if mod is not None:
        for op in CONFIG["ops"]:
            if time.monotonic() - start > CONFIG["total_s"]:
                recs.append({"op": op["name"], "status": "failed", "code": "CAP-DRIVE-BUDGET",
                             "error": "the extension's time budget ran out before this op"})
                continue
            if op.get("unsupported"):
                recs.append({"op": op["name"], "status": "failed", "code": "CAP-DRIVE-SIGNATURE",
                             "error": op["unsupported"]})
                continue
            fn = getattr(mod, op["name"], None)
            if fn is None:
                recs.append({"op": op["name"], "status": "failed", "code": "CAP-DRIVE-IMPORT",
                             "error": "the module has no attribute " + op["name"]})
                continue
            deadline = min(time.monotonic() + CONFIG["op_s"], start + CONFIG["total_s"])
            recs.append(drive(op, fn, CONFIG["checks"], deadline))
            with open(out, "w", encoding="utf-8") as f:  # what ran so far, should the sandbox stop the run
                json.dump(recs, f)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(recs, f)
    print("pallasify-driver: %d of %d ops ran" % (sum(r["status"] == "ok" for r in recs), len(recs)))


main()
