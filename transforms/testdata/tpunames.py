"""Checks the torch names that rule fixes introduce against the installed packages.

Input (stdin): JSON list of {"label", "before", "after", "messages"}: a rule's
example input, the fixed output, and the messages of its findings. For every
dotted name rooted at `torch` or `torch_tpu` (import aliases resolved) that the
output uses and the input does not, and every such name a message mentions and
the input does not, this script checks, with torch_tpu loaded (`import torch`
auto-loads it through its entry point):

  (a) the attribute exists, reached from `import torch` or a module the code
      imports (no other submodule is imported for it);
  (b) for a call that is new (name and argument shape), the argument shape binds
      to inspect.signature (positional count and keyword names);
  (c) it is not internal to TorchTPU, detected the way the package marks it:
      a `_`-prefixed path component (the package treats internal APIs "like an
      API with a `_` prefix in its path"), `__tt_api_stage__ == "Internal"` on
      the object (set by `annotations.internal_or_experimental` and friends), an
      INTERNAL entry in the parent module's `__tt_api_stages__` map, or a name a
      `torch.tpu` public module does not list (`_PUBLIC_MODULES`, served as its
      `dir()`). Deprecated ones (`__tt_api_stage__ == "Deprecated"`) are flagged
      too.

`torch.get_device_module(...).NAME` is checked as `torch.cuda.NAME` and
`torch.tpu.NAME` (the module it returns on either backend); `getattr(obj,
"NAME", default)` is a probe: NAME may be missing (the default is the guard),
but what it finds must not be internal, since the code then calls it; without
a default NAME must exist.
Backend literals given to `torch.compile(backend=...)` must be registered dynamo
backends. Output (stdout): JSON {"checked": [[label, name], ...], "bound": N,
"skipped": [labels of inputs that are not Python], "offenders": [{"label",
"name", "problem"}]}.
"""

import ast
import importlib
import inspect
import json
import re
import sys
import types

STACK_MISSING = 3  # exit status when torch or torch_tpu is not installed

try:
    import torch  # loads torch_tpu (entry point torch.backends: torch_tpu)
except ImportError as e:
    print(f"torch does not import: {e}", file=sys.stderr)
    sys.exit(STACK_MISSING)

ROOTS = ("torch", "torch_tpu")
DEVICE_MODULE = "<device-module>"
MESSAGE_NAME = re.compile(r"\b(?:torch|torch_tpu)(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def import_aliases(tree):
    """Maps local names bound by imports of torch/torch_tpu to dotted paths."""
    out = {root: root for root in ROOTS}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] not in ROOTS:
                    continue
                if a.asname:
                    out[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    out[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in ROOTS:
                continue
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = node.module + "." + a.name
    return out


def dotted(node):
    """The identifiers of a Name/Attribute chain, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    if isinstance(node, ast.Call):
        # torch.get_device_module(...).a.b -> <device-module>.a.b
        parts.append(None)
        parts.reverse()
        return parts
    return None


def shape(call):
    """(positional count, sorted keyword names), or None with * or ** arguments."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    return (len(call.args), tuple(sorted(k.arg for k in call.keywords)))


class Uses:
    """The torch names a module uses: names, calls with their shapes, backend literals."""

    def __init__(self, src):
        tree = ast.parse(src)
        self.aliases = import_aliases(tree)
        self.names = set()
        self.calls = set()  # (name, shape)
        self.backends = set()
        self.probes = set()  # (path, has a default): getattr(obj, "NAME"[, default])
        parents = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) or isinstance(node, ast.ImportFrom):
                continue
            if not isinstance(node, (ast.Name, ast.Attribute)):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue  # not the whole chain
            name = self.resolve(node)
            if name is None:
                continue
            self.names.add(name)
            if isinstance(parent, ast.Call) and parent.func is node:
                self.calls.add((name, shape(parent)))
                if name == "torch.compile":
                    for k in parent.keywords:
                        if k.arg == "backend" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str):
                            self.backends.add(k.value.value)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                    and len(node.args) in (2, 3) and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, str)):
                base = self.resolve_value(node.args[0])
                if base is not None:
                    self.probes.add((base + "." + node.args[1].value, len(node.args) == 3))
        # Imports are uses too: `from torch.amp import GradScaler` needs torch.amp.GradScaler.
        for local, path in self.aliases.items():
            if "." in path and path not in ROOTS:
                self.names.add(path)
        # The modules the code imports (and their parents): only these may be
        # reached by importing; any other name must be an attribute.
        self.modules = set()
        for node in ast.walk(tree):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods = [node.module] + [node.module + "." + a.name for a in node.names]
            for m in mods:
                parts = m.split(".")
                self.modules.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))

    def resolve_value(self, node):
        """resolve for an expression: a name chain, or torch.get_device_module(...) itself."""
        if isinstance(node, ast.Call) and self.resolve(node.func) == "torch.get_device_module":
            return DEVICE_MODULE
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.resolve(node)
        return None

    def resolve(self, node):
        parts = dotted(node)
        if not parts:
            return None
        if parts[0] is None:
            inner = node
            while isinstance(inner, ast.Attribute):
                inner = inner.value
            fn = self.resolve(inner.func) if isinstance(inner, ast.Call) else None
            if fn != "torch.get_device_module" or len(parts) < 2:
                return None
            return ".".join([DEVICE_MODULE] + parts[1:])
        root = self.aliases.get(parts[0])
        if root is None:
            return None
        full = root.split(".") + parts[1:]
        if len(full) < 2:
            return None
        return ".".join(full)


def lookup(path, modules):
    """(object, parent, error) for a dotted path, importing a submodule only where
    the code imports it (modules): user code gets no other import."""
    parts = path.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except Exception as e:  # noqa: BLE001
        return None, None, f"cannot import {parts[0]}: {e}"
    parent = None
    for i, part in enumerate(parts[1:], start=1):
        parent = obj
        try:
            obj = getattr(obj, part)
            continue
        except AttributeError:
            pass
        except Exception as e:  # noqa: BLE001
            return None, parent, f"{'.'.join(parts[:i + 1])}: {type(e).__name__}: {e}"
        prefix = ".".join(parts[: i + 1])
        try:
            if prefix not in modules:
                raise ImportError(prefix)
            obj = importlib.import_module(prefix)
        except Exception:  # noqa: BLE001
            return None, parent, f"{'.'.join(parts[:i])} has no attribute {part!r}"
    return obj, parent, None


def internal(path, obj, parent):
    """Why path is not for user code, or None."""
    parts = path.split(".")
    for p in parts:
        if p.startswith("_") and not (p.startswith("__") and p.endswith("__")):
            return f"internal: {p!r} has a _ prefix"
    stage = getattr(obj, "__tt_api_stage__", None)
    if stage == "Internal":
        prefer = getattr(obj, "__tt_api_prefer__", None)
        return "internal to TorchTPU (__tt_api_stage__ = Internal)" + (f"; use {prefer}" if prefer else "")
    if stage == "Deprecated":
        return f"deprecated in TorchTPU {getattr(obj, '__tt_api_deprecated_version__', '')}".rstrip()
    if isinstance(parent, types.ModuleType):
        stages = parent.__dict__.get("__tt_api_stages__")
        if stages is None and type(parent).__module__ == "torch_tpu._internal.public_api":
            stages = getattr(parent, "__tt_api_stages__", None)
        info = (stages or {}).get(parts[-1])
        if info is not None and getattr(info.stage, "value", None) == "Internal":
            return "internal to TorchTPU (__tt_api_stages__)"
        if type(parent).__module__ == "torch_tpu._internal.public_api" and parts[-1] not in dir(parent):
            return f"not public: {parent.__name__} does not list {parts[-1]!r}"
    return None


def signature_problem(obj, shp):
    """Why a call of that shape does not bind, None when it binds; "" when there is no signature."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    npos, kws = shp
    try:
        sig.bind(*([None] * npos), **{k: None for k in kws})
    except TypeError as e:
        return f"call with {npos} positional and keywords {list(kws)} does not bind to {sig}: {e}"
    return None


def expand(name):
    """The real paths a name stands for."""
    if name.startswith(DEVICE_MODULE + "."):
        rest = name[len(DEVICE_MODULE):]
        return ["torch.cuda" + rest, "torch.tpu" + rest]
    return [name]


def check(cases):
    checked, offenders, bound, skipped = set(), [], 0, []  # checked: (label, path)
    backends = None
    for case in cases:
        label = case["label"]
        try:
            before = Uses(case["before"])
        except SyntaxError:
            if case["after"] != case["before"]:
                offenders.append({"label": label, "name": "", "problem": "input is not Python, yet it was rewritten"})
            skipped.append(label)
            continue
        try:
            after = Uses(case["after"])
        except SyntaxError as e:
            offenders.append({"label": label, "name": "", "problem": f"output does not parse: {e}"})
            continue
        new_names = after.names - before.names
        for m in case.get("messages") or []:
            for n in MESSAGE_NAME.findall(m):
                n = n.rstrip(".")
                if n not in before.names and n not in case["before"]:
                    new_names.add(n)
        new_calls = {c for c in after.calls - before.calls if c[1] is not None}
        for name in sorted(new_names | {c[0] for c in new_calls}):
            for path in expand(name):
                checked.add((label, path))
                obj, parent, err = lookup(path, after.modules)
                if err:
                    offenders.append({"label": label, "name": path, "problem": "missing: " + err})
                    continue
                why = internal(path, obj, parent)
                if why:
                    offenders.append({"label": label, "name": path, "problem": why})
                for cname, shp in sorted(new_calls):
                    if cname != name:
                        continue
                    prob = signature_problem(obj, shp)
                    if prob:
                        offenders.append({"label": label, "name": path, "problem": prob})
                    elif prob is None:
                        bound += 1
        # A getattr probe may find nothing when it has a default; what it finds
        # is called, so it must not be internal.
        for name, has_default in sorted(after.probes - before.probes):
            for path in expand(name):
                checked.add((label, path))
                obj, parent, err = lookup(path, after.modules)
                if err:
                    if not has_default:
                        offenders.append({"label": label, "name": path, "problem": "missing: " + err})
                    continue
                why = internal(path, obj, parent)
                if why:
                    offenders.append({"label": label, "name": path, "problem": "getattr probe finds it: " + why})
        for b in sorted(after.backends - before.backends):
            if backends is None:
                from torch._dynamo import list_backends

                backends = set(list_backends(exclude_tags=()))
            checked.add((label, f"torch.compile(backend={b!r})"))
            if b not in backends:
                offenders.append({"label": label, "name": f"backend={b!r}",
                                  "problem": "not a registered dynamo backend (torch._dynamo.list_backends: "
                                             + ", ".join(sorted(x for x in backends if "TESTING" not in x)) + ")"})
    return {"checked": sorted(checked), "bound": bound, "skipped": skipped, "offenders": offenders}


def main():
    if "torch_tpu" not in sys.modules or not hasattr(torch, "tpu") or not hasattr(torch, "accelerator"):
        print("torch_tpu was not loaded by `import torch` (is torch-tpu installed? TORCH_DEVICE_BACKEND_AUTOLOAD=0?)",
              file=sys.stderr)
        sys.exit(STACK_MISSING)
    cases = json.load(sys.stdin)
    json.dump(check(cases), sys.stdout)


if __name__ == "__main__":
    main()
