"""Static checks on a candidate module before it is imported.

A candidate may use jax (and numpy/math/functools for constants and
plumbing) and nothing else. The ban reasons about what the candidate's names
reach, not about spellings:

- modules: only the ones in ALLOWED_MODULES may be imported or reached, by an
  import or through an attribute chain (``np.ctypeslib``, ``typing.sys``):
  every prefix of a chain rooted at an imported name is resolved against the
  installed packages, and a module object outside the allow-list is refused;
  names known to be modules (MODULE_ATTRS) are refused as attributes of
  anything, for the chains that cannot be resolved;
- module objects are used only as the root of an attribute chain: never
  stored, passed, returned or put in a container (``m = [np][0]`` would hide
  what ``m.ctypeslib`` reaches);
- file I/O: numpy's and jax's readers and writers (``np.fromfile``,
  ``np.load``, ``tofile``, ``np.memmap``, ...) by name and, resolved, by
  identity (so ``np.lib.npyio.load`` is ``np.load``);
- frames and code objects (``gi_frame.f_back.f_globals`` is the harness's
  namespace), dunders, ``getattr`` with a computed name or a banned one,
  open()/exec()/eval()/__import__, try/except fallbacks, module-level
  mutable caches, host callbacks, and calls to the library op the kernel
  replaces outside the Pallas kernel body (when the spec tells us which).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import dataclass

# Modules a candidate may import or reach: name -> whether its submodules
# are allowed too. numpy's submodules are not: ctypeslib (ctypes), f2py and
# distutils (compilers), testing, lib (npyio, format: file I/O), core, rec.
ALLOWED_MODULES = {
    "jax": False, "jax.numpy": True, "jax.lax": True, "jax.nn": True, "jax.random": False, "jax.scipy": True,
    "jax.experimental": False, "jax.experimental.pallas": True, "jax.tree_util": False, "jax.typing": False,
    "jax.dtypes": False, "jax.ops": False, "jax.image": False,
    "numpy": False, "numpy.linalg": False, "numpy.fft": False, "numpy.random": False, "numpy.typing": False,
    "numpy.dtypes": False,
    "math": False, "functools": False, "typing": False, "__future__": False, "ml_dtypes": False,
    "dataclasses": False, "itertools": False, "operator": False, "enum": False,
}
# The import roots, for messages.
ALLOWED_IMPORTS = sorted({m.split(".")[0] for m in ALLOWED_MODULES})
BANNED_CALLS = {
    "open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars",
    "breakpoint", "input", "memoryview", "setattr", "delattr",
}
BANNED_ATTRS = {
    "pure_callback", "io_callback", "host_callback", "callback", "data_ptr",
    "unsafe_buffer_pointer", "_src", "config", "enable_x64", "disable_jit",
}
# Attribute names that are modules outside the allow-list wherever they
# appear (the resolved check catches the rest when the chain resolves).
MODULE_ATTRS = {
    "ctypes", "ctypeslib", "f2py", "distutils", "testing", "lib", "core", "_core", "npyio", "multiarray",
    "os", "sys", "subprocess", "builtins", "importlib", "shutil", "socket", "pathlib", "pickle", "io",
    "profiler", "rec", "char",
}
# Readers and writers of files: by attribute name anywhere, and (IO_OBJECTS)
# by the identity of what a chain resolves to.
IO_ATTRS = {
    "fromfile", "tofile", "dump", "loadtxt", "savetxt", "genfromtxt", "savez", "savez_compressed", "memmap",
    "open_memmap", "DataSource", "fromregex", "recfromtxt", "recfromcsv", "read_array", "write_array",
}
IO_OBJECTS = [
    "numpy.fromfile", "numpy.load", "numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt",
    "numpy.loadtxt", "numpy.genfromtxt", "numpy.memmap", "numpy.DataSource", "numpy.fromregex",
    "numpy.lib.format.open_memmap", "jax.numpy.load", "jax.numpy.save", "jax.numpy.fromfile",
]
# Frames and code objects: a running generator's frame leads to its caller's
# globals (the harness's), a traceback's to every frame.
FRAME_ATTRS = {
    "gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code", "ag_code", "f_back", "f_globals", "f_locals",
    "f_builtins", "f_code", "tb_frame", "tb_next", "co_code", "func_globals", "func_code",
}
ALLOWED_DUNDERS = {"__name__", "__future__"}
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque", "bytearray", "WeakValueDictionary", "WeakKeyDictionary"}
CACHE_DECORATORS = {"lru_cache", "cache", "cached_property"}

_MATMUL = {f"jax.numpy.{n}" for n in ("matmul", "dot", "einsum", "tensordot", "inner", "vdot")} | {
    f"jax.lax.{n}" for n in ("dot", "dot_general", "batch_matmul")}
# Per class: (calls banned anywhere — they do the whole kernel's job —,
# calls banned outside the Pallas kernel body — building blocks inside it —,
# attribute/method names banned outside the kernel body).
_BANS_BY_CLASS = {
    "matmul-tile": (set(), _MATMUL, set()),
    "transpose": (set(), {"jax.numpy.transpose", "jax.numpy.swapaxes", "jax.numpy.moveaxis", "jax.numpy.permute_dims",
                          "jax.numpy.matrix_transpose", "jax.lax.transpose"}, {"T", "transpose", "swapaxes", "mT"}),
    "scan": ({"jax.numpy.cumsum", "jax.numpy.cumprod", "jax.numpy.cumulative_sum", "jax.numpy.cumulative_prod",
              "jax.lax.cumsum", "jax.lax.cumprod", "jax.lax.associative_scan", "jax.lax.cummax", "jax.lax.cummin"},
             set(), {"cumsum", "cumprod"}),
    "histogram": ({"jax.numpy.histogram", "jax.numpy.bincount", "jax.numpy.histogramdd", "jax.numpy.histogram2d",
                   "jax.ops.segment_sum"}, set(), {"at"}),
    "stencil": ({"jax.numpy.convolve", "jax.numpy.correlate", "jax.lax.conv", "jax.lax.conv_general_dilated",
                 "jax.lax.conv_with_general_padding", "jax.lax.reduce_window", "jax.scipy.signal.convolve",
                 "jax.scipy.signal.correlate"}, set(), set()),
}
_ACTIVATIONS = ["gelu", "relu", "relu6", "silu", "swish", "sigmoid", "softplus", "elu", "selu", "celu", "mish",
                "leaky_relu", "hard_tanh", "log_sigmoid", "tanh", "softmax", "log_softmax", "logsumexp"]


def module_allowed(name: str) -> bool:
    """Whether a candidate may import or reach module name."""
    if name in ALLOWED_MODULES:
        return True
    parts = name.split(".")
    if "_src" in parts:
        return False
    return any(ALLOWED_MODULES.get(".".join(parts[:i])) for i in range(len(parts) - 1, 0, -1))


_UNRESOLVED = object()


def _root(name: str):
    """The module object of an import root the candidate may use (imported
    here only when allowed; _UNRESOLVED when it is not installed)."""
    if not module_allowed(name):
        return _UNRESOLVED
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - not installed here: the static checks remain
        return _UNRESOLVED


def _resolve(dotted: str):
    """The objects each prefix of dotted names (a list, shorter than dotted's
    parts when a prefix does not resolve)."""
    parts = dotted.split(".")
    obj = _root(parts[0])
    if obj is _UNRESOLVED:
        return []
    out, path = [obj], parts[0]
    for p in parts[1:]:
        path += "." + p
        try:
            nxt = getattr(obj, p)
        except Exception:  # noqa: BLE001 - a lazy attribute that raises, or a missing one
            nxt = _UNRESOLVED
            if inspect.ismodule(obj) and module_allowed(path):
                try:
                    nxt = importlib.import_module(path)
                except Exception:  # noqa: BLE001
                    pass
        if nxt is _UNRESOLVED:
            break
        out.append(nxt)
        obj = nxt
    return out


_io_ids = None


def _io_objects() -> set:
    global _io_ids
    if _io_ids is None:
        ids = set()
        for d in IO_OBJECTS:
            objs = _resolve(d)
            if len(objs) == len(d.split(".")):
                ids.add(id(objs[-1]))
        _io_ids = ids
    return _io_ids


@dataclass
class Ban:
    line: int
    message: str
    # "security" (imports, I/O, dynamic code, caches, callbacks) or
    # "reference" (calls the op the kernel replaces).
    kind: str = "security"

    def __str__(self):
        return f"line {self.line}: {self.message}"


def reference_bans(cls: str, name: str):
    """(calls banned anywhere, calls banned outside the kernel body,
    attribute/method names banned outside the kernel body) for the op a
    kernel of this class and name replaces."""
    anywhere, outside, attrs = set(), set(), set()
    if cls in _BANS_BY_CLASS:
        a, o, at = _BANS_BY_CLASS[cls]
        anywhere |= a
        outside |= o
        attrs |= at
    low = (name or "").lower().replace("-", "_")
    for act in _ACTIVATIONS:
        if act in low:
            anywhere |= {f"jax.nn.{act}", f"jax.scipy.special.{act}"}
            if act == "sigmoid":
                anywhere.add("jax.scipy.special.expit")
            outside |= {f"jax.numpy.{act}", f"jax.lax.{act}"}
            if act in ("softmax", "log_softmax"):
                anywhere |= {"jax.scipy.special.logsumexp", "jax.nn.logsumexp"}
    if "matmul" in low or "gemm" in low:
        outside |= _MATMUL
    if "cumsum" in low or "scan" in low:
        anywhere |= _BANS_BY_CLASS["scan"][0]
    return anywhere, outside, attrs


class _Checker(ast.NodeVisitor):
    def __init__(self, cls: str, name: str):
        self.bans: list[Ban] = []
        self.aliases: dict[str, str] = {}  # local name -> dotted module/object
        self.ref_anywhere, self.ref_calls, self.ref_attrs = reference_bans(cls, name)
        self.kernel_depth = 0
        self.kernel_names: set[str] = set()
        self.modules: set[str] = set()  # local names bound to module objects
        self.inner: set[int] = set()  # ids of nodes that are the value of an attribute

    def ban(self, node, msg, kind="security"):
        self.bans.append(Ban(getattr(node, "lineno", 0), msg, kind))

    # -- imports ---------------------------------------------------------
    def _check_module(self, node, mod: str):
        if "_src" in mod.split("."):
            self.ban(node, f"import of private module {mod!r}")
        elif not module_allowed(mod):
            self.ban(node, f"import of {mod!r} is not allowed (allowed: {', '.join(sorted(ALLOWED_MODULES))})")

    def _check_reach(self, node, dotted: str, whole: bool):
        """Ban what the chain dotted reaches: a module outside the allow-list
        at any prefix, a file reader or writer; whole: dotted is a complete
        expression, so a module it ends on is used as a value."""
        parts = dotted.split(".")
        if dotted in IO_OBJECTS or (len(parts) > 1 and parts[-1] in IO_ATTRS):
            self.ban(node, f"use of {dotted} (file I/O is not allowed)")
            return
        objs = _resolve(dotted)
        io = _io_objects()
        for i, obj in enumerate(objs):
            if inspect.ismodule(obj) and not module_allowed(getattr(obj, "__name__", "")):
                self.ban(node, f"{'.'.join(parts[:i + 1])} is module {obj.__name__!r}, which a candidate may not use "
                               f"(allowed: {', '.join(sorted(ALLOWED_MODULES))})")
                return
            if id(obj) in io:
                self.ban(node, f"use of {'.'.join(parts[:i + 1])} (file I/O is not allowed)")
                return
        if whole and len(objs) == len(parts) and len(parts) > 1 and inspect.ismodule(objs[-1]):
            self.ban(node, f"module {dotted} used as a value (a module may only be the root of an attribute chain)")

    def visit_Import(self, node):
        for a in node.names:
            self._check_module(node, a.name)
            if a.asname:
                self.aliases[a.asname] = a.name
                self.modules.add(a.asname)
            else:
                self.aliases[a.name.split(".")[0]] = a.name.split(".")[0]
                self.modules.add(a.name.split(".")[0])
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if node.level:
            self.ban(node, "relative import")
            return
        mod = node.module or ""
        self._check_module(node, mod)
        for a in node.names:
            if a.name == "*":
                self.ban(node, f"star import from {mod!r}")
                continue
            if a.name in BANNED_ATTRS or a.name in MODULE_ATTRS or a.name in FRAME_ATTRS:
                self.ban(node, f"import of {mod}.{a.name} is not allowed")
            self.aliases[a.asname or a.name] = f"{mod}.{a.name}" if mod != "__future__" else a.name
            if mod == "__future__":
                continue
            full = f"{mod}.{a.name}"
            self._check_reach(node, full, False)
            objs = _resolve(full)
            if full in ALLOWED_MODULES or len(objs) == len(full.split(".")) and inspect.ismodule(objs[-1]):
                self.modules.add(a.asname or a.name)
        self.generic_visit(node)

    # -- names and attributes -------------------------------------------
    def dotted(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id)
        if base is None:
            return None
        return ".".join([base] + parts[::-1])

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.modules and id(node) not in self.inner:
            self.ban(node, f"module {node.id} used as a value (a module may only be the root of an attribute chain)")
        if node.id.startswith("__") and node.id.endswith("__") and node.id not in ALLOWED_DUNDERS:
            self.ban(node, f"use of {node.id}")
        if node.id in ("__builtins__", "builtins"):
            self.ban(node, f"use of {node.id}")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        a = node.attr
        if a.startswith("__") and a.endswith("__") and a not in ALLOWED_DUNDERS:
            self.ban(node, f"access to dunder attribute .{a}")
        elif a in BANNED_ATTRS:
            full = self.dotted(node) or a
            self.ban(node, f"use of {full} (host callbacks, config changes and raw pointers are not allowed)")
        elif a in MODULE_ATTRS:
            self.ban(node, f"use of .{a} (a module a candidate may not use)")
        elif a in IO_ATTRS:
            self.ban(node, f"use of .{a} (file I/O is not allowed)")
        elif a in FRAME_ATTRS:
            self.ban(node, f"use of .{a} (frame and code introspection is not allowed)")
        elif self.kernel_depth == 0 and a in self.ref_attrs:
            self.ban(node, f"use of .{a} outside the Pallas kernel: the candidate must not fall back to the op it replaces",
                     "reference")
        if id(node) not in self.inner:
            d = self.dotted(node)
            if d is not None:
                self._check_reach(node, d, isinstance(node.ctx, ast.Load))
        if isinstance(node.value, (ast.Attribute, ast.Name)):
            self.inner.add(id(node.value))
        self.generic_visit(node)

    # -- calls -----------------------------------------------------------
    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Name):
            target = self.aliases.get(f.id, f.id)
            if f.id in BANNED_CALLS:
                self.ban(node, f"call to {f.id}()")
            if f.id == "getattr":
                if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant) or (
                        isinstance(node.args[0], ast.Name) and node.args[0].id in self.aliases):
                    self.ban(node, "dynamic getattr (on a module or with a computed name)")
                elif _banned_name(node.args[1].value):
                    self.ban(node, f"getattr of {node.args[1].value!r}")
        else:
            target = self.dotted(f)
        if target and target in self.ref_anywhere:
            self.ban(node, f"call to {target}: the candidate must not call the op it replaces", "reference")
        elif target and self.kernel_depth == 0 and target in self.ref_calls:
            self.ban(node, f"call to {target} outside the Pallas kernel: the candidate must not fall back to the op it replaces",
                     "reference")
        if target and target.endswith("pallas_call") and node.args:
            k = node.args[0]
            if isinstance(k, ast.Call) and node.args and k.args and isinstance(k.args[0], ast.Name):
                self.kernel_names.add(k.args[0].id)  # functools.partial(kernel, ...)
            elif isinstance(k, ast.Name):
                self.kernel_names.add(k.id)
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult) and self.kernel_depth == 0 and "jax.numpy.matmul" in self.ref_calls:
            self.ban(node, "matrix product (@) outside the Pallas kernel: the candidate must not fall back to the op it replaces",
                     "reference")
        self.generic_visit(node)

    # -- control flow and state -----------------------------------------
    def visit_Try(self, node):
        self.ban(node, "try/except in a candidate (a fallback around the kernel is not allowed)")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_With(self, node):
        for item in node.items:
            d = self.dotted(item.context_expr.func) if isinstance(item.context_expr, ast.Call) else None
            if d and d.split(".")[-1] in ("suppress",):
                self.ban(node, "contextlib.suppress around code")
        self.generic_visit(node)

    def visit_Global(self, node):
        self.ban(node, "global statement (module-level mutable state)")

    def _assign_targets(self, node, targets):
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
                    self.ban(node, f"assignment to attribute .{sub.attr} (monkey-patching or hidden state)")

    def visit_Assign(self, node):
        self._assign_targets(node, node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._assign_targets(node, [node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._assign_targets(node, [node.target])
        self.generic_visit(node)

    def _visit_func(self, node):
        for d in node.decorator_list:
            dd = d.func if isinstance(d, ast.Call) else d
            name = dd.attr if isinstance(dd, ast.Attribute) else getattr(dd, "id", "")
            if name in CACHE_DECORATORS:
                self.ban(node, f"@{name} on {node.name} (result caching)")
        for default in list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]:
            if _is_mutable(default):
                self.ban(node, f"mutable default argument in {node.name} (hidden cache)")
        inside = node.name in self.kernel_names
        if inside:
            self.kernel_depth += 1
        self.generic_visit(node)
        if inside:
            self.kernel_depth -= 1

    visit_FunctionDef = _visit_func
    visit_AsyncFunctionDef = _visit_func


def _banned_name(name) -> bool:
    """Whether an attribute of that name may not be read (getattr's constant)."""
    if not isinstance(name, str):
        return True
    if name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDERS:
        return True
    return name in BANNED_ATTRS or name in MODULE_ATTRS or name in IO_ATTRS or name in FRAME_ATTRS


def _is_mutable(v) -> bool:
    if isinstance(v, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(v, ast.Call):
        f = v.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return name in MUTABLE_CALLS
    return False


def _kernel_functions(tree) -> set:
    """Names of functions used as Pallas kernel bodies, plus the module-level
    helpers they call (transitively)."""
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    kernels = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if fname == "pallas_call" and node.args:
                k = node.args[0]
                if isinstance(k, ast.Call) and k.args:
                    k = k.args[0]
                if isinstance(k, ast.Name):
                    kernels.add(k.id)
                elif isinstance(k, ast.Lambda):
                    for sub in ast.walk(k.body):
                        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                            kernels.add(sub.func.id)
    todo = list(kernels)
    while todo:
        fn = defs.get(todo.pop())
        if fn is None:
            continue
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in defs and sub.func.id not in kernels:
                kernels.add(sub.func.id)
                todo.append(sub.func.id)
    return kernels


def check_source(src: str, cls: str = "", name: str = "", filename: str = "candidate.py") -> list[Ban]:
    """Return the bans found in a candidate's source ([] when clean).

    Raises SyntaxError when the source does not parse."""
    tree = ast.parse(src, filename=filename)
    c = _Checker(cls, name)
    c.kernel_names = _kernel_functions(tree)
    # Module-level mutable state.
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_mutable(node.value):
            c.ban(node, "module-level mutable container (a result cache is not allowed)")
    c.visit(tree)
    return c.bans


def mentions_pallas_call(src: str) -> bool:
    """Whether the source refers to pallas_call at all (a static launch check;
    the dynamic one traces the candidate)."""
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "pallas_call":
            return True
        if isinstance(node, ast.Name) and node.id == "pallas_call":
            return True
        if isinstance(node, ast.alias) and node.name.split(".")[-1] == "pallas_call":
            return True
    return False
