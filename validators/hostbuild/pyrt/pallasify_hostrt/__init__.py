"""cuda-as-cpu: run code written for CUDA with the CPU-built original extension.

Installed at interpreter start (sitecustomize) inside the sandbox by
validators/hostbuild.Run. It changes where tensors live, never what an op
computes:

- torch.cuda.is_available() is True, with one device; synchronize and the
  memory queries are host equivalents;
- tensors put on "cuda" (device=, .to(), .cuda(), modules' .cuda()) live on
  the CPU (a TorchFunctionMode maps the device);
- the prebuilt modules import under their real names (e.g. mmcv._ext), and
  torch.utils.cpp_extension.load / load_inline return the prebuilt module
  whose sources match, or record the request (discovery) and raise;
- each call of a prebuilt module's function records the tensors it saw
  (address, shape, dtype) and the range of captured launches it covered, in
  <capture dir>/tensors.jsonl, so launches get shape hints.
"""
import ctypes
import functools
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys

_cfg = {}
_rt = None


def inline_digest(name, cpp_sources, cuda_sources, functions):
    """The identity of load_inline sources (hostbuild.InlineDigest)."""
    h = hashlib.sha256()
    parts = [name, "\x01".join(cpp_sources), "\x01".join(cuda_sources), "\x01".join(functions)]
    h.update("\x00".join(parts).encode("utf-8"))
    return h.hexdigest()


def _as_list(v):
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return list(v.keys())
    return list(v)


def _discover(kind, **req):
    path = _cfg.get("discover")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(dict(kind=kind, **req)) + "\n")


class _Finder(importlib.abc.MetaPathFinder):
    """Imports the prebuilt modules under their real names."""

    def find_spec(self, fullname, path=None, target=None):
        so = (_cfg.get("modules") or {}).get(fullname)
        if not so:
            return None
        loader = _Loader(fullname, so)
        return importlib.util.spec_from_file_location(fullname, so, loader=loader)


class _Loader(importlib.machinery.ExtensionFileLoader):
    def exec_module(self, module):
        super().exec_module(module)
        _wrap_module(module)


def _load_so(name, so):
    spec = importlib.util.spec_from_file_location(name, so, loader=_Loader(name, so))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[name] = mod
    return mod


def _tensors(obj, out, depth=0):
    import torch

    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(o, out, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out, depth + 1)


def _record(fn_name, seq_from, objs):
    cap = os.environ.get("PALLASIFY_CAPTURE_DIR")
    if not cap or _rt is None:
        return
    seq_to = _rt.phr_capture_next_seq()
    if seq_to == seq_from:
        return
    ts = []
    _tensors(objs, ts)
    rows = []
    for t in ts:
        try:
            rows.append({"address": hex(t.data_ptr()), "shape": list(t.shape), "strides": list(t.stride()),
                         "dtype": str(t.dtype).replace("torch.", ""), "storage_offset": t.storage_offset()})
        except Exception:  # a tensor without storage
            continue
    with open(os.path.join(cap, "tensors.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps({"function": fn_name, "seq_from": seq_from, "seq_to": seq_to, "tensors": rows}) + "\n")


def _wrap_module(module):
    for k in dir(module):
        if k.startswith("_"):
            continue
        f = getattr(module, k)
        if type(f).__name__ != "builtin_function_or_method":
            continue
        setattr(module, k, _wrap(f, module.__name__ + "." + k))


def _wrap(f, qual):
    @functools.wraps(f)
    def call(*args, **kwargs):
        seq_from = _rt.phr_capture_next_seq() if _rt is not None else 0
        res = f(*args, **kwargs)
        _record(qual, seq_from, (args, kwargs, res))
        return res

    return call


def _map_device(d):
    import torch

    if isinstance(d, str) and (d == "cuda" or d.startswith("cuda:")):
        return "cpu"
    if isinstance(d, torch.device) and d.type == "cuda":
        return torch.device("cpu")
    return d


def _is_cuda(d):
    import torch

    if isinstance(d, torch.device):
        return d.type == "cuda"
    return isinstance(d, str) and d.startswith("cuda")


def _install_cuda_as_cpu():
    import torch
    from torch.overrides import TorchFunctionMode

    class CudaAsCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.cuda or func is torch.Tensor.cuda.__get__:
                # A host tensor's .cuda() is a copy into a new (device)
                # allocation, as on CUDA: the capture then resolves every
                # argument to a torch allocation (a torch.from_numpy tensor
                # lives in numpy's memory, which the emulator cannot see).
                t = args[0]
                mf = kwargs.get("memory_format")
                return t.clone(memory_format=mf if mf is not None else torch.preserve_format)
            to_cuda = False
            if "device" in kwargs:
                to_cuda = _is_cuda(kwargs["device"])
                kwargs["device"] = _map_device(kwargs["device"])
            if func is torch.Tensor.to:
                # Tensor.to(device | int device index | dtype | tensor, ...)
                to_cuda = to_cuda or any(
                    (i == 1 and isinstance(a, int) and not isinstance(a, bool)) or _is_cuda(a)
                    for i, a in enumerate(args))
                args = tuple("cpu" if (i == 1 and isinstance(a, int) and not isinstance(a, bool)) else _map_device(a)
                             for i, a in enumerate(args))
                out = func(*args, **kwargs)
                # .to("cuda") of a host tensor copies, as .cuda() does
                return out.clone() if to_cuda and out is args[0] else out
            return func(*args, **kwargs)

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda *a, **k: None
    cuda.synchronize = lambda *a, **k: None
    cuda.empty_cache = lambda: None
    cuda.is_initialized = lambda: True
    cuda.init = lambda: None
    cuda.get_device_name = lambda *a, **k: "pallasify cudaemu (CPU)"
    cuda.get_device_capability = lambda *a, **k: (8, 0)
    # torch.manual_seed calls torch.cuda.manual_seed_all when CUDA is
    # available: the CPU generator is already seeded, so these do nothing.
    cuda.manual_seed = lambda *a, **k: None
    cuda.manual_seed_all = lambda *a, **k: None
    cuda.seed = lambda *a, **k: None
    cuda.seed_all = lambda *a, **k: None
    cuda.memory_allocated = lambda *a, **k: 0
    cuda.max_memory_allocated = lambda *a, **k: 0
    cuda.memory_reserved = lambda *a, **k: 0
    cuda.reset_peak_memory_stats = lambda *a, **k: None
    mode = CudaAsCpu()
    mode.__enter__()
    return mode


def _patch_cpp_extension():
    from torch.utils import cpp_extension

    def load_inline(name, cpp_sources, cuda_sources=None, functions=None, *args, **kwargs):
        cpp, cu, fns = _as_list(cpp_sources), _as_list(cuda_sources), _as_list(functions)
        d = inline_digest(name, cpp, cu, fns)
        hit = (_cfg.get("inline") or {}).get(d)
        if hit:
            return _load_so(name, hit)
        _discover("load_inline", name=name, cpp_sources=cpp, cuda_sources=cu, functions=fns,
                  extra_cflags=_as_list(kwargs.get("extra_cflags")),
                  extra_include_paths=_as_list(kwargs.get("extra_include_paths")))
        raise RuntimeError("pallasify hostbuild: EMU-NOT-BUILT: load_inline(name=%r) has no CPU build of these sources" % name)

    def load(name, sources, *args, **kwargs):
        so = (_cfg.get("modules") or {}).get(name)
        if so:
            return _load_so(name, so)
        root = os.getcwd()
        rel = [os.path.relpath(os.path.abspath(s), root) for s in _as_list(sources)]
        _discover("load", name=name, sources=rel, extra_cflags=_as_list(kwargs.get("extra_cflags")),
                  extra_include_paths=[os.path.relpath(os.path.abspath(p), root) for p in _as_list(kwargs.get("extra_include_paths"))])
        raise RuntimeError("pallasify hostbuild: EMU-NOT-BUILT: load(name=%r) has no CPU build" % name)

    cpp_extension.load_inline = load_inline
    cpp_extension.load = load


def install():
    """Install the runtime from the JSON file named by PALLASIFY_HOSTBUILD_CONFIG."""
    global _cfg, _rt
    with open(os.environ["PALLASIFY_HOSTBUILD_CONFIG"], encoding="utf-8") as f:
        _cfg = json.load(f)
    import torch  # noqa: F401  (libc10 first: the runtime wraps its CPU allocator)

    for rt in _cfg.get("runtimes") or []:
        lib = ctypes.CDLL(os.path.join(rt, "libpallasify_hostrt.so"), mode=ctypes.RTLD_GLOBAL)
        lib.phr_capture_next_seq.restype = ctypes.c_longlong
        _rt = _rt or lib
    sys.meta_path.insert(0, _Finder())
    _patch_cpp_extension()
    if _cfg.get("cuda_as_cpu", True):
        _install_cuda_as_cpu()
    for p in _cfg.get("shims") or []:
        if p not in sys.path:
            sys.path.append(p)
