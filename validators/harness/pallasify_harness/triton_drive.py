"""Triton launchers driven without the repository's tests: each launcher (a
Python function that launches a Triton kernel, or a torch.autograd.Function
whose forward or backward does) is called under Triton's interpreter
(TRITON_INTERPRET=1) on CPU tensors made from its own code, with every kernel
launch recorded as triton_capture records it (grid and constexprs as they
were at the launch).

    python -m pallasify_harness.triton_drive --root REPO --request drive.json --out launches.json

The request lists the launchers ({"module": "pkg.ops", "function":
"rms_norm"} or {"module": ..., "class": "RMSNormFunction"} for an
autograd.Function), the import roots and the tree's packages, the launches
kept per kernel, and the seconds one launcher may take.

Inputs come from the launcher's signature and source (ast): a parameter read
as a tensor (x.shape, x.view(...), x.stride(0), torch.empty_like(x), passed
to a kernel) is a tensor whose rank is what the source unpacks or indexes
(M, N = x.shape; x.shape[2]; x.view(-1, N) takes any rank), an index-named
one (target, labels, idx, ...) an int64 tensor within the columns; a
parameter compared with string literals takes one of them; defaults stay;
eps-like names get 1e-6, count-like names a small int, flags False. Tensors
share one column count (77: neither a power of two nor a multiple of any
block, so the masked paths run) and one row count (5). When the call raises,
the failing line (an assert, a check that raises) and its message choose the
next try: another rank for the tensors it names, a column count that is a
multiple of 128, half inputs, None for an optional argument, the other
literals; at most --tries calls. A launcher that ran on float32 runs again at
a second size and on float16 and bfloat16 (kept when it accepts them).
An autograd.Function is driven through apply with its floating inputs
requiring grad, then differentiated with seeded random gradients, so its
backward kernels launch too.

Per launcher the result says what happened: "ok" with the kernels it
launched, else a code (the PTR family: transforms/triton/drive.go) and the
last error.
"""

from __future__ import annotations

import os
import sys

os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import ast  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

# Codes (registered in transforms/triton/drive.go).
CODE_IMPORT = "PTR008"  # the launcher's module does not import
CODE_INPUTS = "PTR009"  # no input the launcher accepts was found
CODE_LAUNCHER = "PTR010"  # the launcher cannot be called from outside (nested, a method)

TENSOR_ATTRS = {
    "shape", "view", "reshape", "stride", "dtype", "device", "numel", "contiguous", "size", "is_contiguous",
    "data_ptr", "dim", "ndim", "new_empty", "new_zeros", "element_size", "flatten", "unsqueeze", "squeeze", "expand",
    "float", "half", "bfloat16", "transpose", "permute", "T", "is_cuda", "clone", "detach", "requires_grad",
    "view_as", "reshape_as", "nelement", "storage_offset", "type_as", "new_ones", "new_full", "unbind", "split", "chunk",
    "fill_", "zero_", "copy_", "squeeze_", "unsqueeze_", "sum", "mean", "max", "min", "abs", "exp", "to",
}
INDEX_NAME = re.compile(r"(^|_)(target|targets|label|labels|idx|index|indices|ids|positions?|pos)($|_)", re.I)
INT_NAME = re.compile(r"^(n|m|k|num_\w+|n_\w+|\w*_size|\w*size|dim|\w*_dim|block\w*|BLOCK\w*|\w*_len|seq\w*|group\w*|"
                      r"\w*_count|count|chunk\w*|stride\w*|offset\w*|step\w*)$", re.I)
FLOAT_NAME = re.compile(r"(eps|epsilon|scale|alpha|beta|gamma_val|temperature|temp|p|prob|dropout\w*|lr|momentum|"
                        r"smoothing|label_smoothing|threshold|theta|base|factor|softcap\w*|\w*_value)$", re.I)
WEIGHT_NAME = re.compile(r"^(w|weight|weights|bias|b|gamma|beta|scale|g|W|B)$")

ROWS, COLS = 5, 77
SECOND = (3, 300)


class Expired(Exception):
    pass


def _analyse(fn):
    """What the source says about each parameter: tensor evidence, rank, literals compared."""
    info = {}
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return info

    def rec(name):
        return info.setdefault(name, {"tensor": False, "rank": 0, "any_rank": False, "literals": [], "none": False,
                                      "bool": False, "int": False, "float": False, "tables": []})

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in TENSOR_ATTRS:
            r = rec(node.value.id)
            r["tensor"] = True
            if node.attr in ("view", "reshape", "flatten"):
                r["any_rank"] = True
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
                and isinstance(node.value.value, ast.Name):
            sl = node.slice
            if isinstance(sl, ast.Constant) and isinstance(sl.value, int) and sl.value >= 0:
                r = rec(node.value.value.id)
                r["rank"] = max(r["rank"], sl.value + 1)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
                and isinstance(node.value.value, ast.Name):
            r = rec(node.value.value.id)
            if not any(isinstance(e, ast.Starred) for e in node.targets[0].elts):
                r["rank"] = max(r["rank"], len(node.targets[0].elts))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "empty_like", "zeros_like", "ones_like", "full_like", "randn_like", "rand_like"):
            for a in node.args[:1]:
                if isinstance(a, ast.Name):
                    rec(a.id)["tensor"] = True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):  # kernel[grid](...)
            for a in node.args:
                if isinstance(a, ast.Name):
                    rec(a.id)  # known at least
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name):
            for c in node.comparators:
                vals = []
                if isinstance(c, ast.Constant):
                    vals = [c.value]
                elif isinstance(c, (ast.Tuple, ast.List, ast.Set)):
                    vals = [e.value for e in c.elts if isinstance(e, ast.Constant)]
                for v in vals:
                    if v is None:
                        rec(node.left.id)["none"] = True
                    elif isinstance(v, str) and v not in rec(node.left.id)["literals"]:
                        rec(node.left.id)["literals"].append(v)
        # x in TABLE, TABLE[x]: x takes one of a module-level table's keys
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and len(node.ops) == 1 \
                and isinstance(node.ops[0], ast.In) and isinstance(node.comparators[0], (ast.Name, ast.Attribute)):
            rec(node.left.id)["tables"].append(ast.unparse(node.comparators[0]))
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) \
                and isinstance(node.value, (ast.Name, ast.Attribute)):
            rec(node.slice.id)["tables"].append(ast.unparse(node.value))
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and isinstance(node.test, ast.Name):
            rec(node.test.id)["bool"] = True
    glb = getattr(fn, "__globals__", {})
    for r in info.values():
        for expr in r["tables"]:
            try:
                table = eval(expr, dict(glb))  # noqa: S307 - a name or attribute of the launcher's own module
            except Exception:  # noqa: BLE001
                continue
            if isinstance(table, dict):
                keys = list(table)
            elif isinstance(table, (list, tuple, set, frozenset)):
                keys = list(table)
            else:
                continue
            for k in sorted(keys, key=lambda v: not isinstance(v, str)):
                if isinstance(k, (str, int, float, bool)) and k not in r["literals"]:
                    r["literals"].append(k)
    return info


class Plan:
    """One try's inputs: per parameter a kind and its settings, the sizes and dtype."""

    def __init__(self, params, info, defaults):
        self.rows, self.cols, self.dtype = ROWS, COLS, "float32"
        self.kinds = {}  # name -> ("tensor", rank) | ("index", rank) | ("value", v) | ("default",)
        for name in params:
            self.kinds[name] = self._first(name, info.get(name), name in defaults, defaults.get(name))

    @staticmethod
    def _first(name, r, has_default, default):
        r = r or {}
        if has_default and not (r.get("tensor") and default is None):
            return ("default",)
        if INDEX_NAME.search(name) and (r.get("tensor") or not has_default):
            return ("index", max(r.get("rank", 0), 1))
        if r.get("literals"):
            return ("value", r["literals"][0])
        if r.get("tensor") or r.get("rank"):
            rank = r.get("rank") or (1 if WEIGHT_NAME.match(name) else 2)
            return ("tensor", rank)
        if FLOAT_NAME.search(name):
            return ("value", 1e-6 if "eps" in name.lower() else 0.5)
        if r.get("bool") or name.startswith(("is_", "use_", "has_", "in_place", "inplace", "return_")):
            return ("value", False)
        if INT_NAME.match(name):
            return ("value", 4)
        if WEIGHT_NAME.match(name):
            return ("tensor", 1)
        return ("tensor", 2)

    def copy(self):
        p = Plan.__new__(Plan)
        p.rows, p.cols, p.dtype, p.kinds = self.rows, self.cols, self.dtype, dict(self.kinds)
        return p

    def key(self):
        return json.dumps([self.rows, self.cols, self.dtype, sorted((k, list(v)) for k, v in self.kinds.items())],
                          default=str)

    def shape(self, rank):
        lead = [2, 3, 2][: max(rank - 2, 0)]
        return tuple(lead + ([self.rows] if rank >= 2 else []) + [self.cols]) if rank >= 1 else ()

    def build(self, params, grad):
        import torch

        gen = torch.Generator().manual_seed(0)
        dt = getattr(torch, self.dtype)
        args = []
        for name in params:
            k = self.kinds[name]
            if k[0] == "default":
                break  # the rest keep their defaults (positional order)
            if k[0] == "value":
                args.append(k[1])
            elif k[0] == "none":
                args.append(None)
            elif k[0] == "index":
                shape = self.shape(k[1] - 1) if k[1] > 1 else (self.rows,)
                args.append(torch.randint(0, min(self.cols, self.rows), shape, generator=gen, dtype=torch.int64))
            else:
                t = torch.randn(self.shape(k[1]), generator=gen, dtype=torch.float32).to(dt)
                if grad:
                    t.requires_grad_(True)
                args.append(t)
        return args

    def describe(self):
        parts = []
        for name, k in self.kinds.items():
            if k[0] == "tensor":
                parts.append(f"{name}: {self.dtype}{list(self.shape(k[1]))}")
            elif k[0] == "index":
                parts.append(f"{name}: int64 index")
            elif k[0] == "value":
                parts.append(f"{name}={k[1]!r}")
            elif k[0] == "none":
                parts.append(f"{name}=None")
        return ", ".join(parts)


def _failing(exc, files):
    """The innermost frame of the tree's launcher files in exc's traceback: (line text, names on it)."""
    line = ""
    for fr in traceback.extract_tb(exc.__traceback__):
        if fr.filename in files:
            line = fr.line or ""
    names = set(re.findall(r"[A-Za-z_]\w*", line + " " + str(exc)))
    return line, names


def _mutations(plan, exc, line, names, info):
    """Next plans to try after plan raised exc at line, most likely first."""
    msg = (str(exc) + " " + line).lower()
    out = []
    # "a, b, c, d = x.shape" unpacked a tensor of another rank: that rank, first
    m = re.search(r"values to unpack \(expected (\d+)", str(exc))
    u = re.search(r"=\s*([A-Za-z_]\w*)\.shape\s*$", line.strip())
    if m and u and plan.kinds.get(u.group(1), ("",))[0] in ("tensor", "index", "value", "none"):
        p = plan.copy()
        p.kinds[u.group(1)] = ("tensor", int(m.group(1)))
        out.append(p)
    named = [n for n in plan.kinds if n in names] or list(plan.kinds)
    if any(w in msg for w in ("%", "divisible", "multiple", "power of 2", "power_of_2", "align")):
        for cols in (128, 256):
            p = plan.copy()
            p.cols = cols
            out.append(p)
    if any(w in msg for w in ("dtype", "float16", "bfloat16", "half", "fp16", "bf16")):
        for dt in ("float16", "bfloat16"):
            p = plan.copy()
            p.dtype = dt
            out.append(p)
    for n in named:
        k = plan.kinds[n]
        if k[0] == "tensor":
            for rank in (1, 2, 3, 4):
                if rank != k[1]:
                    p = plan.copy()
                    p.kinds[n] = ("tensor", rank)
                    out.append(p)
            p = plan.copy()
            p.kinds[n] = ("none",)
            out.append(p)
            p = plan.copy()
            p.kinds[n] = ("index", 1)
            out.append(p)
        elif k[0] == "value":
            for v in (info.get(n) or {}).get("literals", [])[1:]:
                p = plan.copy()
                p.kinds[n] = ("value", v)
                out.append(p)
            alts = {bool: [True], int: [1, 8, 0], float: [1.0, 0.0], str: []}.get(type(k[1]), [])
            for v in alts:
                p = plan.copy()
                p.kinds[n] = ("value", v)
                out.append(p)
            p = plan.copy()
            p.kinds[n] = ("tensor", 2)
            out.append(p)
        elif k[0] == "none":
            p = plan.copy()
            p.kinds[n] = ("tensor", 1)
            out.append(p)
        elif k[0] == "index":
            p = plan.copy()
            p.kinds[n] = ("tensor", k[1])
            out.append(p)
    p = plan.copy()
    p.rows = p.cols
    out.append(p)
    return out


def _drop(rec, before):
    """Forget the launches from index before on (a failed try's), counts too."""
    for l in rec.launches[before:]:
        rec.counts[l["kernel"]] = rec.counts.get(l["kernel"], 1) - 1
    del rec.launches[before:]


def _call(target, plan, params, autograd, per_call):
    import torch

    def expire(*_):
        raise Expired(f"ran past {per_call}s")

    signal.signal(signal.SIGALRM, expire)
    signal.alarm(per_call)
    _note(plan.describe())
    try:
        args = plan.build(params, grad=autograd)
        out = target(*args)
        if autograd:
            outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                    if isinstance(o, torch.Tensor) and o.requires_grad]
            if outs:
                gen = torch.Generator().manual_seed(1)
                torch.autograd.backward(outs, [torch.randn(o.shape, generator=gen).to(o.dtype) for o in outs])
    finally:
        signal.alarm(0)


def _import_bare(name):
    """Import module name with its parent packages as bare modules (their
    __init__.py not run), after forgetting what the failed import left."""
    import importlib
    import types

    top = name.split(".")[0]
    for m in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
        del sys.modules[m]
    parts = name.split(".")
    for i in range(1, len(parts)):
        pkg = ".".join(parts[:i])
        dirs = [os.path.join(r, *parts[:i]) for r in sys.path if isinstance(r, str)]
        dirs = [d for d in dirs if os.path.isdir(d)]
        if not dirs:
            break
        m = types.ModuleType(pkg)
        m.__path__ = dirs[:1]
        m.__package__ = pkg
        sys.modules[pkg] = m
    return importlib.import_module(name)


def drive(entry, rec, tries, per_call, files):
    """Drive one launcher; returns its result record."""
    import importlib

    res = {"module": entry["module"], "function": entry.get("function", ""), "class": entry.get("class", ""),
           "status": "error", "code": "", "error": "", "tries": [], "launched": []}
    try:
        mod = importlib.import_module(entry["module"])
    except BaseException as e:  # noqa: BLE001 - a module that does not import is a result
        first = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        try:  # again with its parent packages bare: their __init__ may import what the launcher does not need
            mod = _import_bare(entry["module"])
        except BaseException as e2:  # noqa: BLE001
            res["code"], res["error"] = CODE_IMPORT, first
            if str(e2) != str(e):
                res["error"] += f" (with bare parent packages: {type(e2).__name__}: {' '.join(str(e2).split())[:200]})"
            return res
    autograd = False
    if entry.get("class"):
        cls = getattr(mod, entry["class"], None)
        import torch

        if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
            res["code"], res["error"] = CODE_LAUNCHER, f"{entry['class']} is not a module-level torch.autograd.Function"
            return res
        fn, target, autograd = cls.forward, cls.apply, True
        if not callable(fn):
            res["code"], res["error"] = CODE_IMPORT, f"{entry['class']}.forward is {fn!r} (a decorator the environment lacks)"
            return res
    else:
        fn = getattr(mod, entry["function"], None)
        if not callable(fn):
            res["code"], res["error"] = CODE_LAUNCHER, f"{entry['function']} is not a module-level function"
            return res
        target = fn
    files.add(getattr(mod, "__file__", "") or "")
    raw = inspect.unwrap(fn)
    try:
        sig = inspect.signature(raw)
    except (TypeError, ValueError) as e:
        res["code"], res["error"] = CODE_LAUNCHER, f"no signature: {e}"
        return res
    params, defaults = [], {}
    for i, (name, p) in enumerate(sig.parameters.items()):
        if autograd and i == 0:
            continue  # ctx
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
            continue
        params.append(name)
        if p.default is not p.empty:
            defaults[name] = p.default
    info = _analyse(raw)
    plan = Plan(params, info, defaults)
    seen, queue, done = set(), [plan], None
    t0 = time.monotonic()
    while queue and len(res["tries"]) < tries and time.monotonic() - t0 < per_call * 2:
        plan = queue.pop(0)
        if plan.key() in seen:
            continue
        seen.add(plan.key())
        before = len(rec.launches)
        rec.test = f"pallasify drive {entry['module']}.{entry.get('class') or entry.get('function')}({plan.describe()})"
        try:
            _call(target, plan, params, autograd, per_call)
            res["tries"].append({"inputs": plan.describe(), "error": ""})
            done = plan
            break
        except BaseException as e:  # noqa: BLE001 - the error chooses the next try
            if isinstance(e, KeyboardInterrupt):
                raise
            err = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
            line, names = _failing(e, files)
            if line:
                err += f" (at: {line.strip()[:120]})"
            res["tries"].append({"inputs": plan.describe(), "error": err})
            _drop(rec, before)  # a failed try's launches are not the launcher's
            queue = _mutations(plan, e, line, names, info) + queue
    if done is None:
        res["code"] = CODE_INPUTS
        res["error"] = res["tries"][-1]["error"] if res["tries"] else "no try ran"
        return res
    res["status"] = "ok"
    # a second size and the half dtypes, where the launcher takes them
    for rows, cols, dt in ((SECOND[0], SECOND[1], "float32"), (ROWS, COLS, "float16"), (ROWS, COLS, "bfloat16")):
        p = done.copy()
        p.dtype = dt
        if done.cols == COLS:
            p.rows, p.cols = rows, cols
        before = len(rec.launches)
        rec.test = f"pallasify drive {entry['module']}.{entry.get('class') or entry.get('function')}({p.describe()})"
        try:
            _call(target, p, params, autograd, per_call)
            res["tries"].append({"inputs": p.describe(), "error": ""})
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            _drop(rec, before)
            res["tries"].append({"inputs": p.describe(), "error": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"})
    return res


def drive_forked(entry, rec, tries, per_call, files):
    """drive() in a forked child, so a launcher that crashes the process
    (an out-of-bounds access in native code) loses only its own result; the
    child's launches are merged into rec."""
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    progress = path + ".try"
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            global _PROGRESS
            _PROGRESS = progress
            before = len(rec.launches)
            r = drive(entry, rec, tries, per_call, files)
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"result": r, "launches": rec.launches[before:]}, f, default=str)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    out = None
    try:
        with open(path, encoding="utf-8") as f:
            out = json.load(f)
    except (OSError, ValueError):
        pass
    last = ""
    try:
        with open(progress, encoding="utf-8") as f:
            last = f.read()
    except OSError:
        pass
    for p in (path, progress):
        try:
            os.remove(p)
        except OSError:
            pass
    if out is None:
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
        return {"module": entry["module"], "function": entry.get("function", ""), "class": entry.get("class", ""),
                "status": "error", "code": CODE_INPUTS, "error": f"the process crashed ({how}) on inputs {last}",
                "tries": [{"inputs": last, "error": "crashed"}], "launched": []}
    for l in out["launches"]:
        if rec.counts.get(l["kernel"], 0) < rec.max:
            rec.counts[l["kernel"]] = rec.counts.get(l["kernel"], 0) + 1
            rec.launches.append(l)
    return out["result"]


_PROGRESS = ""


def _note(text):
    """Say which inputs the child is about to try (read if it crashes)."""
    if _PROGRESS:
        with open(_PROGRESS, "w", encoding="utf-8") as f:
            f.write(text)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="pallasify_harness.triton_drive", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--request", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    with open(a.request, encoding="utf-8") as f:
        req = json.load(f)
    root = os.path.abspath(a.root)
    os.chdir(root)
    for r in reversed([root] + [os.path.join(root, d) for d in req.get("import_roots") or [] if d]):
        if r not in sys.path:
            sys.path.insert(0, r)
    res = {"schema": "pallasify.triton-drive/v1", "launchers": [], "launches": [], "error": ""}
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401

        from .triton_capture import Recorder, StandInFinder, _missing_top_levels
        from .triton_ref import install_dtype_call, install_float_args, install_libdevice

        packages = req.get("packages") or []
        modfiles = [os.path.join(root, f) for f in req.get("files") or []]
        finder = StandInFinder(list(packages) + _missing_top_levels(modfiles, set(packages)))
        sys.meta_path.append(finder)
        rec = Recorder(int(req.get("max_launches", 4)))
        rec.install()
        install_libdevice(set())
        install_float_args()
        install_dtype_call()
        files = set(modfiles)
        torch.set_num_threads(1)  # forked children run ops of their own
        import contextlib

        torch.cuda.device = lambda *_a, **_k: contextlib.nullcontext()  # CPU tensors: no device to enter
        for entry in req.get("launchers") or []:
            r = drive_forked(entry, rec, int(req.get("tries", 12)), int(req.get("per_call", 30)), files)
            res["launchers"].append(r)
        res["launches"] = rec.launches
        launched = {}
        for l in rec.launches:
            launched.setdefault(l["test"].split("(")[0].removeprefix("pallasify drive "), set()).add(l["kernel"])
        for r in res["launchers"]:
            r["launched"] = sorted(launched.get(f"{r['module']}.{r['class'] or r['function']}", ()))
    except Exception as e:  # noqa: BLE001 - the drive reports, never raises
        res["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
