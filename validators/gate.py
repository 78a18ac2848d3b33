"""pallasify LLM static gate: checks a drafted candidate module before the
validator runs it. The candidate is parsed, never imported or executed.

usage: python gate.py CANDIDATE CLASS NAME   (prints one JSON object)

Checks, in order:
  1. the source parses (Python 3 ast);
  2. the harness's AST ban (forbidden modules such as os/subprocess/socket/
     ctypes/importlib, open/exec/eval, host callbacks, module caches, calls to
     the op the kernel replaces outside the Pallas kernel body);
  3. the candidate contract: a top-level ``def run(args, *, interpret)`` and a
     ``pallas_call``;
  4. every jax name the module reaches through its imports exists in the
     installed (pinned) jax, and every keyword argument passed to a jax
     callable is one its signature accepts.
"""

import ast
import difflib
import importlib
import inspect
import json
import sys


def problem(out, line, msg):
    out.append({"line": int(line or 0), "message": msg})


def short(dotted, aliases_rev):
    for full, alias in aliases_rev:
        if dotted == full or dotted.startswith(full + "."):
            return alias + dotted[len(full):]
    return dotted


def resolve(dotted):
    """Return (object, None) or (None, (existing_prefix, missing_attr, obj))."""
    parts = dotted.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except Exception:  # noqa: BLE001 - a module that is not installed
        return None, ("", parts[0], None)
    path = parts[0]
    for p in parts[1:]:
        nxt = getattr(obj, p, None)
        if nxt is None and inspect.ismodule(obj):
            try:
                nxt = importlib.import_module(path + "." + p)
            except Exception:  # noqa: BLE001
                nxt = None
        if nxt is None:
            return None, (path, p, obj)
        obj, path = nxt, path + "." + p
    return obj, None


class Gate(ast.NodeVisitor):
    def __init__(self, jax_version):
        self.aliases = {}  # local name -> dotted path (jax-rooted only)
        self.problems = []
        self.seen = set()
        self.v = jax_version

    def rev(self):
        return sorted(((full, a) for a, full in self.aliases.items()), key=lambda t: -len(t[0]))

    def missing(self, node, dotted, miss):
        prefix, attr, obj = miss
        key = (prefix, attr)
        if key in self.seen:
            return
        self.seen.add(key)
        hint = ""
        if obj is not None:
            close = difflib.get_close_matches(attr, [n for n in dir(obj) if not n.startswith("_")], n=3, cutoff=0.6)
            if close:
                hint = " (did you mean " + ", ".join(close) + "?)"
        where = short(prefix, self.rev()) if prefix else "jax"
        problem(self.problems, node.lineno, f"{where}.{attr} does not exist in jax {self.v}{hint}")

    def visit_Import(self, node):
        for a in node.names:
            if a.name.split(".")[0] != "jax":
                continue
            obj, miss = resolve(a.name)
            if miss:
                self.missing(node, a.name, miss)
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                self.aliases[a.name.split(".")[0]] = a.name.split(".")[0]

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level or mod.split(".")[0] != "jax":
            return
        for a in node.names:
            if a.name == "*":
                continue
            full = mod + "." + a.name
            obj, miss = resolve(full)
            if miss:
                self.missing(node, full, miss)
                continue
            self.aliases[a.asname or a.name] = full

    def dotted(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id]] + parts[::-1])

    def visit_Attribute(self, node):
        d = self.dotted(node)
        if d is not None:
            obj, miss = resolve(d)
            if miss:
                self.missing(node, d, miss)
                return  # do not report the shorter prefixes again
        self.generic_visit(node)

    def visit_Call(self, node):
        d = self.dotted(node.func) if isinstance(node.func, ast.Attribute) else (
            self.aliases.get(node.func.id) if isinstance(node.func, ast.Name) else None)
        if d is not None:
            obj, miss = resolve(d)
            if obj is not None and callable(obj):
                self.check_keywords(node, d, obj)
        self.generic_visit(node)

    def check_keywords(self, node, dotted, obj):
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            return
        params = sig.parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return
        ok = [p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
        for kw in node.keywords:
            if kw.arg is None or kw.arg in ok:
                continue
            close = difflib.get_close_matches(kw.arg, ok, n=2, cutoff=0.6)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            problem(self.problems, node.lineno,
                    f"{short(dotted, self.rev())}() has no keyword argument {kw.arg!r} in jax {self.v}{hint}; "
                    f"it accepts: {', '.join(ok)}")


def contract(tree, out):
    run = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
    if not run:
        problem(out, 0, "no top-level `def run(args, *, interpret)`: the candidate contract requires it")
    else:
        a = run[0].args
        if len(a.args) != 1 or [k.arg for k in a.kwonlyargs] != ["interpret"]:
            problem(out, run[0].lineno, "run must be declared exactly as `def run(args, *, interpret)`")
    if not any(isinstance(n, ast.Attribute) and n.attr == "pallas_call" or isinstance(n, ast.Name) and n.id == "pallas_call"
               for n in ast.walk(tree)):
        problem(out, 0, "no pl.pallas_call: the candidate must compute through a Pallas kernel")


def check(src, cls, name, jax_version):
    out = []
    try:
        tree = ast.parse(src, filename="candidate.py")
    except SyntaxError as e:
        problem(out, e.lineno, f"syntax error: {e.msg}")
        return out
    try:
        from pallasify_harness import astban
        for b in astban.check_source(src, cls, name):
            problem(out, b.line, "banned: " + b.message)
    except ImportError as e:
        problem(out, 0, f"gate: harness ban list unavailable: {e}")
    contract(tree, out)
    g = Gate(jax_version)
    g.visit(tree)
    out.extend(g.problems)
    out.sort(key=lambda p: p["line"])
    return out


def main():
    """gate.py CANDIDATE CLASS NAME, or gate.py --batch ITEMS.json where the
    file lists {"path", "class", "name"} objects: one JSON result per line."""
    import jax
    if sys.argv[1] == "--batch":
        with open(sys.argv[2], encoding="utf-8") as f:
            items = json.load(f)
    else:
        items = [{"path": sys.argv[1], "class": sys.argv[2], "name": sys.argv[3]}]
    for it in items:
        with open(it["path"], encoding="utf-8") as f:
            src = f.read()
        print(json.dumps({"jax_version": jax.__version__, "problems": check(src, it["class"], it["name"], jax.__version__)}))


if __name__ == "__main__":
    main()
