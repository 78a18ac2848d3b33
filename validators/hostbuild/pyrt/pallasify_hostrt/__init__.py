"""cuda-as-cpu: run code written for CUDA with the CPU-built original extension.

Installed at interpreter start (sitecustomize) inside the sandbox by
validators/hostbuild.Run. It changes where tensors live, never what an op
computes:

- torch.cuda.is_available() is True, with one device; synchronize and the
  memory queries are host equivalents;
- tensors put on "cuda" (device=, .to(), .cuda(), modules' .cuda()) live on
  the CPU (a TorchFunctionMode maps the device), and a host tensor's
  is_cuda is True (as is_cuda() is is_cpu() in the CPU-built extensions);
- the prebuilt modules import under their real names (e.g. mmcv._ext), and
  torch.utils.cpp_extension.load / load_inline return the prebuilt module
  whose sources match, or record the request (discovery) and raise;
- each call of a prebuilt module's function records the tensors it saw
  (address, shape, dtype) and the range of captured launches it covered, in
  <capture dir>/tensors.jsonl, so launches get shape hints;
- with capture on, the backward probe: the first call of each of the
  repository's autograd Functions that tracks no gradient (a test that checks
  only the forward) is repeated once on copies of its inputs with gradients
  on, and differentiated with seeded random output gradients, so the backward
  kernels launch at the shapes the test used. The test's own call, result and
  RNG state are untouched; the launches the probe made are listed in
  <capture dir>/probes.jsonl. PALLASIFY_CAPTURE_BACKWARD=0 turns it off;
- with capture on, data stand-ins: numpy.fromfile of a file under the
  working tree that the tree lacks (a corpus subset without tests/data)
  gives an empty array whose first reshape to a concrete shape returns seeded
  random data of that shape and dtype, so the op runs at the shapes the test
  names. The test's comparison with its (equally missing) expected data then
  fails, as it should; the stand-in is listed in probes.jsonl with the launch
  sequence number it was made at. PALLASIFY_CAPTURE_STANDINS=0 turns it off.
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


_HOST_ORIGIN = ctypes.create_string_buffer(b"host")


def _adopt(objs):
    """Register, for one call, the memory of tensors torch did not allocate.

    A tensor made from a numpy array (torch.from_numpy, torch.FloatTensor(a))
    lives in numpy's memory, which the runtime's allocation table does not
    hold, so its launches would record the pointer without contents. Returns
    the bases registered (removed again after the call).
    """
    if _rt is None or not os.environ.get("PALLASIFY_CAPTURE_DIR"):
        return []
    ts, added = [], []
    _tensors(objs, ts)
    for t in ts:
        try:
            st = t.untyped_storage()
            base, n = st.data_ptr(), st.nbytes()
        except Exception:  # a tensor without storage
            continue
        if not base or n == 0 or base in added or _rt.phr_alloc_find(base, None):
            continue
        _rt.phr_alloc_add(base, n, _HOST_ORIGIN)
        added.append(base)
    return added


def _wrap(f, qual):
    @functools.wraps(f)
    def call(*args, **kwargs):
        seq_from = _rt.phr_capture_next_seq() if _rt is not None else 0
        added = _adopt((args, kwargs))
        try:
            res = f(*args, **kwargs)
        finally:
            for base in added:
                _rt.phr_alloc_remove(base)
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

    # t.is_cuda: a host tensor stands for a CUDA one, as is_cuda() is
    # is_cpu() in the CPU-built extensions (a wrapper's `assert
    # grad_output.is_cuda` holds). A property of the Python class, not the
    # mode: autograd runs a Function's backward with the mode off.
    torch.Tensor.is_cuda = property(lambda t: t.device.type in ("cpu", "cuda"))

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


def _install_backward_probe():
    import torch
    from torch.autograd import Function

    desc = Function.__dict__["apply"]  # a C classmethod in torch 2.15, a Python one in older releases
    if isinstance(desc, classmethod):
        orig = desc.__func__
    else:
        def orig(cls, *args, **kwargs):
            return desc.__get__(None, cls)(*args, **kwargs)
    probed = set()

    def apply(cls, *args, **kwargs):
        out = orig(cls, *args, **kwargs)
        if cls not in probed and _probe_wanted(cls, args, out):
            probed.add(cls)
            _probe_backward(cls, orig, args, kwargs)
        return out

    Function.apply = classmethod(apply)


def _probe_wanted(cls, args, out):
    import torch
    from torch.autograd import Function

    mod = getattr(cls, "__module__", "") or ""
    if mod.startswith("torch") or mod.startswith("pallasify_hostrt"):
        return False
    if getattr(cls, "backward", None) is getattr(Function, "backward", None):
        return False
    if not torch.is_grad_enabled():
        return False
    outs = []
    _tensors(out, outs)
    ins = []
    _tensors(args, ins)
    # the test tracks no gradient through this call: its backward would not run
    return any(t.is_floating_point() for t in ins) and not any(t.requires_grad for t in outs)


def _probe_backward(cls, orig, args, kwargs):
    import torch

    seq_from = _rt.phr_capture_next_seq() if _rt is not None else 0
    name = getattr(cls, "__module__", "?") + "." + getattr(cls, "__qualname__", cls.__name__)
    status = "ok"
    try:
        leaves = []

        def leaf(a):
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                t = a.detach().clone().requires_grad_(True)
                leaves.append(t)
                return t
            return a

        ins = [leaf(a) for a in args]
        gen = torch.Generator().manual_seed(0)
        with torch.enable_grad():
            out = orig(cls, *ins, **kwargs)
            outs = []
            _tensors(out, outs)
            outs = [o for o in outs if o.requires_grad]
            if outs:
                grads = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
                torch.autograd.grad(outs, leaves, grad_outputs=grads, allow_unused=True)
            else:
                status = "no output tracks a gradient"
    except Exception as e:  # the probe never fails the test
        status = "failed: " + (str(e).splitlines() or [type(e).__name__])[0][:200]
    seq_to = _rt.phr_capture_next_seq() if _rt is not None else 0
    _note_probe({"probe": "backward", "function": name, "seq_from": seq_from, "seq_to": seq_to, "status": status})


def _note_probe(row):
    cap = os.environ.get("PALLASIFY_CAPTURE_DIR")
    if cap:
        with open(os.path.join(cap, "probes.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


def _install_data_standins():
    import numpy as np

    orig_fromfile = np.fromfile
    root = os.path.realpath(os.getcwd())

    class StandIn(np.ndarray):
        """An absent data file: shaped (and filled) by the test's first reshape."""

        def reshape(self, *shape, **kwargs):
            src = getattr(self, "_pallasify_standin", None)
            shp = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
            try:
                dims = [int(d) for d in shp]
            except (TypeError, ValueError):
                dims = []
            if src is None or self.size != 0 or not dims or any(d <= 0 for d in dims):
                return super().reshape(*shape, **kwargs)
            seed = int(hashlib.sha256(src.encode("utf-8")).hexdigest()[:8], 16)
            rng = np.random.default_rng(seed)
            if np.issubdtype(self.dtype, np.floating):
                data = rng.standard_normal(dims).astype(self.dtype)
            elif self.dtype == np.bool_:
                data = rng.integers(0, 2, dims).astype(np.bool_)
            else:
                data = rng.integers(0, 4, dims).astype(self.dtype)
            seq = _rt.phr_capture_next_seq() if _rt is not None else 0
            _note_probe({"probe": "standin", "file": src, "shape": dims, "dtype": str(self.dtype), "seq_from": seq})
            return data

    def fromfile(file, dtype=float, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)):
            path = os.path.realpath(os.fspath(file))
            if not os.path.exists(path) and (path == root or path.startswith(root + os.sep)):
                a = np.empty(0, dtype=dtype).view(StandIn)
                a._pallasify_standin = os.path.relpath(path, root)
                return a
        return orig_fromfile(file, dtype, *args, **kwargs)

    np.fromfile = fromfile


def install():
    """Install the runtime from the JSON file named by PALLASIFY_HOSTBUILD_CONFIG."""
    global _cfg, _rt
    with open(os.environ["PALLASIFY_HOSTBUILD_CONFIG"], encoding="utf-8") as f:
        _cfg = json.load(f)
    import torch  # noqa: F401  (libc10 first: the runtime wraps its CPU allocator)

    for rt in _cfg.get("runtimes") or []:
        lib = ctypes.CDLL(os.path.join(rt, "libpallasify_hostrt.so"), mode=ctypes.RTLD_GLOBAL)
        lib.phr_capture_next_seq.restype = ctypes.c_longlong
        lib.phr_alloc_find.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.phr_alloc_find.restype = ctypes.c_int
        lib.phr_alloc_add.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
        lib.phr_alloc_add.restype = None
        lib.phr_alloc_remove.argtypes = [ctypes.c_void_p]
        lib.phr_alloc_remove.restype = None
        _rt = _rt or lib
    sys.meta_path.insert(0, _Finder())
    _patch_cpp_extension()
    if _cfg.get("cuda_as_cpu", True):
        _install_cuda_as_cpu()
    if os.environ.get("PALLASIFY_CAPTURE_DIR") and os.environ.get("PALLASIFY_CAPTURE_BACKWARD", "1") != "0":
        _install_backward_probe()
    if os.environ.get("PALLASIFY_CAPTURE_DIR") and os.environ.get("PALLASIFY_CAPTURE_STANDINS", "1") != "0":
        _install_data_standins()
    for p in _cfg.get("shims") or []:
        if p not in sys.path:
            sys.path.append(p)
