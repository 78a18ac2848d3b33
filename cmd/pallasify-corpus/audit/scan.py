"""pallasify-corpus audit: list the CUDA sites left in a migrated tree.

Reads (never imports or runs) every Python file under ROOT and prints JSON:
{"sites": [{"path", "line", "kind", "text", "blocks"}], "unparsed": [path, ...]}.
A site's blocks are the header lines of the statements around it (if, with,
def with its decorators, class, ...): a finding there may speak for the
whole block (a guard or a test kept CUDA-only).

A CUDA site is code that names CUDA, not prose:
  - an attribute or module path naming CUDA (torch.cuda.*, x.cuda(), x.is_cuda,
    torch.backends.cudnn, torch.cuda.amp, nvtx, pynvml, cupy, pycuda);
  - a device or backend string: "cuda", "cuda:N", "nccl", an f-string or
    format string starting "cuda:", "gpu" passed as a keyword named
    accelerator/device/device_type/backend;
  - an import of a CUDA-only module.
Comments and docstrings are prose; an identifier that merely contains "cuda"
(use_cuda) is the code's own name for its choice, counted where it is used
with one of the above. Files pallasify writes (_pallasify_*.py) are ours.
"""

import ast
import json
import os
import re
import sys

CUDA_ATTR = re.compile(r"^(cuda|is_cuda|cudnn|nvtx|cudart)$")
CUDA_MODULE = re.compile(r"^(cupy|cupy_\w+|pycuda|pynvml|nvidia_smi|cuda|numba\.cuda|torch\.cuda(\.\w+)*|apex|flash_attn|xformers|bitsandbytes|triton)(\.|$)")
DEVICE_STR = re.compile(r"^(cuda|nccl)(:\d*)?$", re.I)
DEVICE_PREFIX = re.compile(r"^cuda:", re.I)
DEVICE_KW = {"accelerator", "device", "device_type", "backend", "map_location", "device_map"}
SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".tox", ".eggs", "build", "dist"}


def docstring_nodes(tree):
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.add(id(node.value))
    return out


def scan_file(path, rel):
    with open(path, "rb") as f:
        src = f.read()
    tree = ast.parse(src, filename=rel)
    lines = src.decode("utf-8", "replace").splitlines()
    docs = docstring_nodes(tree)
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node

    def blocks(node):
        out = []
        n = parents.get(id(node))
        while n is not None:
            if isinstance(n, ast.stmt) and hasattr(n, "body"):
                out.append(n.lineno)
                out.extend(d.lineno for d in getattr(n, "decorator_list", []))
            n = parents.get(id(n))
        return sorted(set(out))
    for node in ast.walk(tree):  # an f-string's parts are its site, once
        if isinstance(node, ast.JoinedStr):
            docs.update(id(v) for v in node.values)
    found = {}

    def beside_tpu(node):
        # A per-device table or list that names "tpu" too ({"cuda": "nccl",
        # "tpu": "tpu_dist"}, ("cuda", "tpu")) handles the TPU: not a miss.
        par = parents.get(id(node))
        elts = []
        if isinstance(par, ast.Dict):
            elts = par.keys
        elif isinstance(par, (ast.List, ast.Tuple, ast.Set)):
            elts = par.elts
        return any(isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.split(":")[0] == "tpu" for e in elts)

    def add(node, kind):
        line = node.lineno
        key = (line, kind)
        if key not in found:
            text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            found[key] = {"path": rel, "line": line, "kind": kind, "text": text[:160], "blocks": blocks(node)}

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and CUDA_ATTR.match(node.attr):
            add(node, "attribute ." + node.attr)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if CUDA_MODULE.match(a.name):
                    add(node, "import " + a.name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:  # .cuda: the repo's own module
            if CUDA_MODULE.match(node.module):
                add(node, "import " + node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if DEVICE_STR.match(node.value.strip()) and not beside_tpu(node):
                add(node, "string " + node.value.strip().lower().split(":")[0])
        elif isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and DEVICE_PREFIX.match(first.value):
                add(node, "f-string cuda:")
        elif isinstance(node, ast.keyword) and node.arg in DEVICE_KW:
            v = node.value
            if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.strip().lower() == "gpu":
                add(v, "keyword %s='gpu'" % node.arg)
    return list(found.values())


def main(root):
    sites, unparsed = [], []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            if not name.endswith(".py") or name.startswith("_pallasify_"):
                continue
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            rel = os.path.relpath(path, root)
            try:
                sites.extend(scan_file(path, rel))
            except (SyntaxError, ValueError, OSError) as e:
                unparsed.append({"path": rel, "error": str(e).splitlines()[0]})
    sites.sort(key=lambda s: (s["path"], s["line"], s["kind"]))
    json.dump({"sites": sites, "unparsed": unparsed}, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
