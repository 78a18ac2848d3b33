"""The simulated TPU host: a Python process where "tpu" is a device whose data and compute are on the CPU.

Started by sitecustomize.py (PALLASIFY_TPUHOST=1) before the user's code; see README.md for the
contract and its limits. Real TorchTPU is never loaded here (TORCH_DEVICE_BACKEND_AUTOLOAD=0): its
op registrations come from the coverage JSON written by `python -m pallasify_tpuhost.coverage`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
import types

from pallasify_tpuhost import report as _report

_STATE: dict = {}

# Ops that move data between devices or take CPU indices: torch accepts a CPU tensor beside a
# device tensor here (copies, index tensors, 0-dim scalars are handled below).
_MIX_OK = {
    "aten::copy_",
    "aten::_to_copy",
    "aten::_copy_from",
    "aten::_copy_from_and_resize",
    "aten::to.device",
    "aten::to.dtype_layout",
    "aten::index.Tensor",
    "aten::index_put_",
    "aten::index_put",
    "aten::_index_put_impl_",
    "aten::_unsafe_index.Tensor",
    "aten::_unsafe_index_put",
    "aten::set_.source_Tensor",
    "aten::lift_fresh",
    "aten::lift_fresh_copy",
}

# torch's own op namespaces (never a user's custom op).
_TORCH_NAMESPACES = ("aten", "prim", "prims", "c10d", "_c10d_functional", "_dtensor", "profiler")

# Matmul and convolution overloads whose float32 inputs TorchTPU runs in bfloat16 at its DEFAULT
# precision (StableHLO dot_general / convolution precision config).
_MATMUL_OPS = {
    "aten::mm", "aten::mm.out", "aten::bmm", "aten::bmm.out", "aten::addmm", "aten::addmm.out",
    "aten::addmm_", "aten::baddbmm", "aten::baddbmm.out", "aten::baddbmm_", "aten::addbmm",
    "aten::addmv", "aten::mv", "aten::dot", "aten::vdot", "aten::linear", "aten::matmul",
    "aten::convolution", "aten::_convolution", "aten::convolution_overrideable", "aten::conv2d",
    "aten::conv1d", "aten::conv3d", "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_attention_math", "aten::einsum", "aten::tensordot",
}

# TorchTPU's Precision values (StableHLO): DEFAULT runs float32 matmuls in one bfloat16 pass.
PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")


def _cfg(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


# --------------------------------------------------------------------------- the tensor


def _torch():
    import torch

    return torch


class _Precision:
    """A stand-in for torch.tpu.Precision: DEFAULT / HIGH / HIGHEST."""

    def __init__(self, name):
        self.name = name
        self.value = name

    def __repr__(self):
        return f"Precision.{self.name}"


class _PrecisionEnum:
    DEFAULT = _Precision("DEFAULT")
    HIGH = _Precision("HIGH")
    HIGHEST = _Precision("HIGHEST")


def _current_precision() -> str:
    stack = _STATE.get("precision_stack") or []
    if stack:
        return stack[-1]
    return _STATE.get("precision_global", "HIGHEST")


def _make_tensor_class():
    torch = _torch()
    from torch.utils._pytree import tree_map

    class TpuTensor(torch.Tensor):
        """A tensor on device tpu:N whose data is a CPU tensor (elem)."""

        elem: torch.Tensor

        @staticmethod
        def __new__(cls, elem, index=0):
            r = torch.Tensor._make_wrapper_subclass(
                cls,
                elem.size(),
                strides=elem.stride(),
                storage_offset=elem.storage_offset(),
                dtype=elem.dtype,
                layout=elem.layout,
                device=torch.device("tpu", index),
                requires_grad=elem.requires_grad,
            )
            r.elem = elem
            return r

        __torch_function__ = torch._C._disabled_torch_function_impl

        def __repr__(self, *, tensor_contents=None):
            with _no_record():
                s = repr(self.elem.detach())
            extra = f", device='{self.device}'"
            if self.requires_grad:
                if self.grad_fn is not None:
                    extra += f", grad_fn=<{type(self.grad_fn).__name__}>"
                else:
                    extra += ", requires_grad=True"
            return s[:-1] + extra + ")" if s.endswith(")") else s

        def __tensor_flatten__(self):
            return ["elem"], self.device.index or 0

        @staticmethod
        def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
            return TpuTensor(inner["elem"], ctx)

        def tolist(self):
            # a copy to the host, as on any device (torch refuses it for wrapper subclasses)
            with _no_record():
                return self.elem.tolist()

        def numpy(self, *, force=False):
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy "
                    "the tensor to host memory first."
                )
            with _no_record():
                return self.elem.detach().numpy(force=True)

        def __reduce_ex__(self, proto):
            # pickling (torch.save, DataLoader workers) stores CPU data, loaded back on tpu
            return (_rebuild, (self.elem.detach(), self.device.index or 0))

        @classmethod
        def __torch_dispatch__(cls, func, types_, args=(), kwargs=None):
            return _dispatch(cls, func, args, kwargs or {})

    TpuTensor.__module__ = __name__
    TpuTensor.__qualname__ = "TpuTensor"
    globals()["TpuTensor"] = TpuTensor
    _STATE["tree_map"] = tree_map
    return TpuTensor


def _rebuild(elem, index):
    return _STATE["cls"](elem, index)


_NO_RECORD = [0]


@contextlib.contextmanager
def _no_record():
    _NO_RECORD[0] += 1
    try:
        yield
    finally:
        _NO_RECORD[0] -= 1


def _tpu_index(dev, default=0) -> int | None:
    """The index of a tpu device argument, None when it is not a tpu device."""
    torch = _torch()
    if dev is None:
        return None
    if isinstance(dev, str):
        try:
            dev = torch.device(dev)
        except RuntimeError:
            return None
    if isinstance(dev, torch.device) and dev.type == "tpu":
        idx = dev.index if dev.index is not None else _STATE.get("current", default)
        n = _STATE["devices"]
        if idx >= n:
            raise RuntimeError(
                f"tpu:{idx} does not exist: this (simulated) TPU host has {n} device(s) "
                f"(PALLASIFY_TPUHOST_DEVICES={n})"
            )
        return idx
    return None


def _op_name(func) -> str:
    return func.name()


def _has_kernel(name: str, key: str) -> bool:
    try:
        return _torch()._C._dispatch_has_kernel_for_dispatch_key(name, key)
    except RuntimeError:
        return False


def _has_direct_kernel(name: str, key: str) -> bool:
    """Whether the op registers a kernel for key itself (an alias key such as
    CompositeExplicitAutograd), not through the dispatcher's computed table."""
    try:
        dump = _torch()._C._dispatch_dump(name)
        return any(line.startswith((key + ":", key + "[alias]:")) for line in dump.splitlines())
    except RuntimeError:
        return False


def _custom_cuda_only(name: str) -> bool:
    """A torch.ops op outside aten that only CUDA (or only GPU keys) can run."""
    if not _has_kernel(name, "CUDA"):
        return False
    for key in ("CPU", "PrivateUse1", "CompositeExplicitAutograd", "CompositeImplicitAutograd",
                "CompositeExplicitAutogradNonFunctional"):
        if _has_kernel(name, key):
            return False
    return True


def _not_implemented(name: str) -> NotImplementedError:
    # TorchTPU's backend fallback with its cpu fallback off (its default): the text its .so carries.
    return NotImplementedError(f"'{name}' is not implemented for TPU. Please file a feature request")


def _round_bf16(t):
    torch = _torch()
    if isinstance(t, torch.Tensor) and t.dtype == torch.float32:
        return t.to(torch.bfloat16).to(torch.float32)
    return t


def _dispatch(cls, func, args, kwargs):
    torch = _torch()
    rep = _STATE["report"]
    name = _op_name(func)
    recording = _NO_RECORD[0] == 0
    ns = func.namespace

    # a jax_op kernel: run through JAX on the CPU
    jax_ops = _STATE["jax_op_names"]
    if name in jax_ops or name.split(".")[0] in jax_ops:
        if recording:
            rep.jax_op(name.split(".")[0])
    elif ns not in _TORCH_NAMESPACES and _custom_cuda_only(name):
        if recording:
            rep.custom_cuda(name, _report.site())
        raise _not_implemented(name)

    # device indices and a CPU tensor where torch refuses one
    flat = torch.utils._pytree.tree_leaves((args, kwargs))
    idx = None
    cpu_arg = None
    for a in flat:
        if isinstance(a, cls):
            if idx is None:
                idx = a.device.index or 0
            elif (a.device.index or 0) != idx and name not in _MIX_OK:
                other = f"tpu:{a.device.index or 0}"
                _mixup(name, f"tpu:{idx}", other, recording)
        elif isinstance(a, torch.Tensor) and a.device.type == "cpu" and a.dim() > 0:
            cpu_arg = a
    if idx is None:
        idx = 0
    if cpu_arg is not None and name not in _MIX_OK and ns == "aten":
        _mixup(name, f"tpu:{idx}", "cpu", recording)

    # coverage: native / out / composite run; fallback and unsupported are recorded
    cls_ = _STATE["coverage"].get(name)
    if ns == "aten" and recording:
        if cls_ is None:
            cls_ = "unsupported"
        if cls_ in ("fallback", "unsupported"):
            rep.op(name, cls_, _report.site())
            if _STATE["fallback"] == "raise":
                raise _not_implemented(name)

    # TorchTPU runs float32 matmuls and convolutions in bfloat16 at Precision.DEFAULT
    unwrap_to = [None]

    def unwrap(x):
        if isinstance(x, cls):
            return x.elem
        if isinstance(x, torch.device) and x.type == "tpu":
            unwrap_to[0] = x.index or 0
            return torch.device("cpu")
        return x

    uargs = _STATE["tree_map"](unwrap, args)
    ukwargs = _STATE["tree_map"](unwrap, kwargs)
    to_cpu = False
    if "device" in kwargs:
        d = kwargs["device"]
        dt = d.type if isinstance(d, torch.device) else (str(d).split(":")[0] if d is not None else None)
        if dt == "cpu":
            to_cpu = True
        elif dt == "tpu":
            idx = _tpu_index(d)
    if _STATE["precision_mode"] == "default" and name in _MATMUL_OPS and _current_precision() == "DEFAULT":
        uargs = tuple(_round_bf16(a) for a in uargs)

    with _no_record():
        out = func(*uargs, **ukwargs)

    if to_cpu:
        return out
    by_id = {}
    for a in flat:
        if isinstance(a, cls):
            by_id[id(a.elem)] = a

    def wrap(x):
        if isinstance(x, torch.Tensor) and not isinstance(x, cls):
            same = by_id.get(id(x))
            if same is not None:
                return same
            if x.device.type == "cpu":
                return cls(x, idx)
        return x

    return _STATE["tree_map"](wrap, out)


def _mixup(op: str, first: str, second: str, recording: bool):
    msg = (
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{first} and {second}!"
    )
    if recording:
        _STATE["report"].mixup(op, f"{first},{second}", _report.site(), f"RuntimeError: {msg}")
    raise RuntimeError(msg)


# --------------------------------------------------------------------------- factories


def _register_factories(lib, cls):
    """PrivateUse1 kernels for the aten ops that take no tensor and a device (empty, randperm, ...):
    each runs on the CPU and returns the result on the tpu device asked for. Read from the schemas,
    not typed by hand."""
    torch = _torch()
    done = set()
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::"):
            continue
        base, _, overload = name.partition(".")
        try:
            schema = torch._C._get_schema(base, overload)
        except RuntimeError:
            continue
        argtypes = [str(a.type) for a in schema.arguments]
        if not any("Device" in t for t in argtypes):
            continue
        if any("Tensor" in t for t in argtypes):
            continue
        cpu = _has_kernel(name, "CPU")
        explicit = _has_direct_kernel(name, "CompositeExplicitAutograd")
        if not cpu and not explicit:
            continue  # CompositeImplicit (decomposes before dispatch) or nothing to run on the CPU
        # A CompositeExplicitAutograd factory (arange, linspace, full, ...) would build an empty tpu
        # tensor and fill it through its .out op, whose resize the wrapper's sizes never see: run the
        # whole factory on the CPU instead, as for one with a CPU kernel.
        if name in done:
            continue
        done.add(name)
        op = getattr(getattr(torch.ops.aten, base.split("::")[1]), overload or "default")
        lib.impl(name.split("::")[1], functools.partial(_factory, op, cls), "PrivateUse1")


def _register_copies(lib, cls):
    """_copy_from for PrivateUse1: what copy_ runs across devices where torch has the Python key
    excluded (torch.tensor(data, device="tpu") builds its tensor that way)."""

    def data(t):
        return t.elem if isinstance(t, cls) else t

    def copy_from(self, dst, non_blocking=False):
        data(dst).copy_(data(self))
        return dst

    def copy_from_and_resize(self, dst):
        d = data(dst)
        d.resize_(data(self).shape)
        d.copy_(data(self))
        return dst

    lib.impl("_copy_from", copy_from, "PrivateUse1")
    lib.impl("_copy_from_and_resize", copy_from_and_resize, "PrivateUse1")


def _factory(op, cls, *args, **kwargs):
    torch = _torch()
    idx = _tpu_index(kwargs.get("device"))
    kwargs = dict(kwargs)
    kwargs["device"] = torch.device("cpu")
    if kwargs.get("pin_memory"):
        kwargs["pin_memory"] = False
    name = op.name()
    if _NO_RECORD[0] == 0:
        c = _STATE["coverage"].get(name, "unsupported")
        if c in ("fallback", "unsupported"):
            _STATE["report"].op(name, c, _report.site())
            if _STATE["fallback"] == "raise":
                raise _not_implemented(name)
    with _no_record():
        out = op(*args, **kwargs)
    return cls(out, idx or 0)


# --------------------------------------------------------------------------- torch.tpu


def _framework_caller(depth: int = 2) -> bool:
    f = sys._getframe(depth)
    path = os.path.abspath(f.f_code.co_filename)
    torch_dir = os.path.dirname(os.path.abspath(_torch().__file__))
    pkg = os.path.dirname(os.path.abspath(__file__))
    return path.startswith(torch_dir + os.sep) or path.startswith(pkg + os.sep)


def _internal(name: str, impl):
    """A torch.tpu function TorchTPU 0.2.0 keeps for the framework: user code gets its RuntimeError."""
    info = _STATE["tpu_api"].get(name) or {}

    @functools.wraps(impl)
    def fn(*args, **kwargs):
        if info.get("stage") == "internal" and info.get("raises") and not _framework_caller():
            raise RuntimeError(info.get("error") or f"{name} is internal to TorchTPU")
        return impl(*args, **kwargs)

    fn.__name__ = name
    return fn


class _Stream:
    """TorchTPU's streams are dummies: every call is a no-op."""

    def __init__(self, device=None, priority=0, **kwargs):
        self.device = _torch().device("tpu", 0)
        self.priority = priority

    def synchronize(self):
        pass

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        return event or _Event()

    def query(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class _Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing

    def record(self, stream=None):
        pass

    def wait(self, stream=None):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, end):
        raise RuntimeError("the simulated TPU host does not time anything (no Event timing)")


def _make_tpu_module():
    torch = _torch()
    n = _STATE["devices"]
    mod = types.ModuleType("torch.tpu", "The simulated TPU host's torch.tpu (TorchTPU 0.2.0's public names).")
    mod.__file__ = __file__

    def is_available():
        return n > 0

    def device_count():
        return n

    def current_device():
        return _STATE.get("current", 0)

    def set_device(device):
        i = device if isinstance(device, int) else (_tpu_index(device) or 0)
        if i != _STATE.get("current", 0):
            raise RuntimeError("changing the active TPU device within a process is not supported")

    def synchronize(device=None):
        return None

    def current_stream(device=None):
        return _Stream()

    def set_stream(stream):
        return None

    def get_rng_state(device="tpu"):
        return torch.get_rng_state()

    def set_rng_state(new_state, device="tpu"):
        torch.set_rng_state(new_state)

    def initial_seed():
        return torch.initial_seed()

    def manual_seed(seed):
        return None

    def manual_seed_all(seed):
        return None

    @contextlib.contextmanager
    def device(dev):
        yield

    @contextlib.contextmanager
    def device_of(obj):
        yield

    def get_device_name(device=None):
        return "TPU (pallasify simulated host, CPU)"

    def get_device_properties(device=None):
        return types.SimpleNamespace(
            name=get_device_name(), total_memory=0, multi_processor_count=1, type="tpu"
        )

    def get_amp_supported_dtype():
        return [torch.bfloat16, torch.float16, torch.float32]

    def is_initialized():
        return True

    def default_stream(device=None):
        return _Stream()

    @contextlib.contextmanager
    def stream(s):
        yield s

    @contextlib.contextmanager
    def precision(mode):
        if not isinstance(mode, _Precision):
            raise ValueError(
                "expected to be one of 'PrecisionConfig.DEFAULT', 'PrecisionConfig.HIGH', or "
                f"'PrecisionConfig.HIGHEST', got '{mode}'"
            )
        stack = _STATE.setdefault("precision_stack", [])
        stack.append(mode.name)
        try:
            yield
        finally:
            stack.pop()

    @contextlib.contextmanager
    def set_eager_mode(mode):
        yield

    def topology_aware_mesh(*a, **k):
        raise NotImplementedError("torch.tpu.topology_aware_mesh is not emulated by the simulated TPU host")

    impls = {
        "Event": _Event, "Stream": _Stream, "Precision": _PrecisionEnum, "EagerMode": types.SimpleNamespace(
            DEFER_AND_FUSE="DEFER_AND_FUSE", DEFER_NEVER="DEFER_NEVER",
            DEFER_NEVER_AND_LAUNCH_BLOCKING="DEFER_NEVER_AND_LAUNCH_BLOCKING"),
        "current_device": current_device, "current_stream": current_stream,
        "default_generators": (), "default_stream": default_stream, "device": device,
        "device_count": device_count, "device_of": device_of,
        "get_amp_supported_dtype": get_amp_supported_dtype, "get_device_name": get_device_name,
        "get_device_properties": get_device_properties, "get_rng_state": get_rng_state,
        "initial_seed": initial_seed, "is_available": is_available, "is_initialized": is_initialized,
        "manual_seed": manual_seed, "manual_seed_all": manual_seed_all, "precision": precision,
        "set_device": set_device, "set_eager_mode": set_eager_mode, "set_rng_state": set_rng_state,
        "set_stream": set_stream, "stream": stream, "synchronize": synchronize,
        "topology_aware_mesh": topology_aware_mesh,
        "allow_excess_precision": False, "eager_mode": "DEFER_AND_FUSE",
    }
    for k, v in impls.items():
        setattr(mod, k, _internal(k, v) if callable(v) and not isinstance(v, type) and k in _STATE["tpu_api"] else v)
    # What torch itself calls on a device module (never an error for the framework).
    mod._is_in_bad_fork = lambda: False
    mod._lazy_init = lambda: None
    mod.is_bf16_supported = None
    del mod.is_bf16_supported  # TorchTPU 0.2.0 has none

    from pallasify_tpuhost import jaxop

    pallas = types.ModuleType("torch.tpu.pallas")
    pallas.jax_op = jaxop.jax_op

    def get_pallas_mesh(*a, **k):
        raise NotImplementedError("torch.tpu.pallas.get_pallas_mesh is not emulated (no multi-chip mesh)")

    pallas.get_pallas_mesh = get_pallas_mesh
    mod.pallas = pallas
    for sub in ("compiler", "distributed", "ops", "optimizers", "profiler"):
        m = types.ModuleType(f"torch.tpu.{sub}")
        m.__getattr__ = _not_emulated(f"torch.tpu.{sub}")
        setattr(mod, sub, m)
        sys.modules[f"torch.tpu.{sub}"] = m
    sys.modules["torch.tpu.pallas"] = pallas
    return mod


def _not_emulated(prefix):
    def getattr_(name):
        if name.startswith("__"):
            raise AttributeError(name)

        def fn(*a, **k):
            raise NotImplementedError(f"{prefix}.{name} is not emulated by the simulated TPU host")

        return fn

    return getattr_


def _install_torch_tpu_stub(tpu_mod):
    """`import torch_tpu` (what our wired ops modules do) finds this, not the real package."""
    from pallasify_tpuhost import jaxop

    root = types.ModuleType("torch_tpu", "pallasify simulated TPU host: a stand-in for TorchTPU")
    root.__path__ = []
    internal = types.ModuleType("torch_tpu._internal")
    internal.__path__ = []
    pallas = types.ModuleType("torch_tpu._internal.pallas")
    pallas.jax_op = jaxop.jax_op
    internal.pallas = pallas
    root._internal = internal
    root.api = types.SimpleNamespace(tpu_device=lambda: _torch().device("tpu"))
    sys.modules.update({
        "torch_tpu": root,
        "torch_tpu._internal": internal,
        "torch_tpu._internal.pallas": pallas,
    })


# --------------------------------------------------------------------------- CUDA-only calls


_WATCH_DEPTH = threading.local()


def _watch(api: str, fn):
    """Calls fn unchanged; a failure that is CUDA's "no GPU here" is recorded with its call site,
    under the outermost watched API (torch.cuda functions call each other)."""

    @functools.wraps(fn)
    def w(*args, **kwargs):
        depth = getattr(_WATCH_DEPTH, "n", 0)
        _WATCH_DEPTH.n = depth + 1
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if depth == 0 and _report.is_cuda_failure(e) and not getattr(e, "_pallasify_recorded", False):
                _STATE["report"].cuda_call(api, _report.site(), f"{type(e).__name__}: {str(e).splitlines()[0]}")
                try:
                    e._pallasify_recorded = True
                except AttributeError:
                    pass
            raise
        finally:
            _WATCH_DEPTH.n = depth

    return w


def _watch_cuda():
    torch = _torch()
    cuda = torch.cuda
    for name in dir(cuda):
        if name.startswith("_"):
            continue
        obj = getattr(cuda, name, None)
        # Only torch.cuda's own: the namespace also holds imported names (typing, enum, torch's).
        if not (getattr(obj, "__module__", "") or "").startswith("torch.cuda"):
            continue
        if isinstance(obj, type):
            for meth in ("__new__", "__init__"):
                raw = obj.__dict__.get(meth)
                if raw is None:
                    continue
                if isinstance(raw, staticmethod):
                    setattr(obj, meth, staticmethod(_watch(f"torch.cuda.{name}", raw.__func__)))
                elif isinstance(raw, types.FunctionType):
                    setattr(obj, meth, _watch(f"torch.cuda.{name}", raw))
        elif isinstance(obj, types.FunctionType):
            setattr(cuda, name, _watch(f"torch.cuda.{name}", obj))
    torch.Tensor.cuda = _watch("Tensor.cuda", torch.Tensor.cuda)
    torch.Tensor.to = _watch("Tensor.to", torch.Tensor.to)
    torch.nn.Module.cuda = _watch("Module.cuda", torch.nn.Module.cuda)


# --------------------------------------------------------------------------- compile and dist


def _install_compile():
    torch = _torch()
    from torch._dynamo.backends.registry import register_backend, lookup_backend

    def tpu_backend(gm, example_inputs, **kwargs):
        # Eager: every op of the graph then runs through the tpu tensor and is checked as it runs.
        return gm.forward

    register_backend(name="tpu", compiler_fn=tpu_backend)
    orig = torch.compile

    @functools.wraps(orig)
    def compile_(*args, **kwargs):
        backend = kwargs.get("backend")
        if backend is None:
            kwargs["backend"] = "tpu"
            backend = "tpu"
        if "dynamic" not in kwargs and backend == "tpu":
            kwargs["dynamic"] = False
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
        _STATE["report"].compile(name, kwargs.get("dynamic"), _report.site())
        if backend == "inductor":
            raise RuntimeError(
                "torch.compile(..., backend='inductor') on TPU is experimental and does not yet have full "
                "TPU support (simulated TPU host: pass backend='tpu')"
            )
        return orig(*args, **kwargs)

    torch.compile = compile_
    del lookup_backend


def _install_dist():
    import torch.distributed as dist

    if not dist.is_available():
        return

    def create(store, rank, size, timeout):
        from torch.distributed import ProcessGroupGloo

        opts = ProcessGroupGloo._Options()
        opts._timeout = timeout
        opts._devices = [ProcessGroupGloo.create_default_device()]
        return ProcessGroupGloo(store, rank, size, opts)

    for name in ("tpu_dist", "tpu"):
        try:
            dist.Backend.register_backend(name, create, devices=["cpu", "tpu"])
        except (ValueError, RuntimeError):
            pass
    try:
        dist.Backend.default_device_backend_map["tpu"] = "tpu_dist"
    except AttributeError:
        pass


# --------------------------------------------------------------------------- start


def _accelerator_patch():
    """torch.accelerator calls TorchTPU answers (its streams are dummies; synchronize waits for
    nothing here): the Python device guard has no stream support of its own."""
    import torch

    acc = torch.accelerator
    orig_sync = acc.synchronize

    @functools.wraps(orig_sync)
    def synchronize(device=None):
        return None

    acc.synchronize = synchronize
    for name in ("current_stream", "set_stream"):
        orig = getattr(acc, name, None)
        if orig is None:
            continue

        def make(orig, name):
            @functools.wraps(orig)
            def f(*a, **k):
                try:
                    return orig(*a, **k)
                except RuntimeError:
                    return _Stream() if name == "current_stream" else None

            return f

        setattr(acc, name, make(orig, name))


def _precision_patch():
    torch = _torch()

    def set_(p):
        m = {"medium": "DEFAULT", "high": "HIGH", "highest": "HIGHEST"}
        if p not in m:
            raise ValueError(f"expected to be one of 'highest', 'high', or 'medium', got '{p}'")
        _STATE["precision_global"] = m[p]

    def get_():
        return {"DEFAULT": "medium", "HIGH": "high", "HIGHEST": "highest"}[_STATE.get("precision_global", "HIGHEST")]

    torch.set_float32_matmul_precision = set_
    torch.get_float32_matmul_precision = get_


def start() -> None:
    if _STATE.get("started"):
        return
    _STATE["started"] = True
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    # JAX (jax_op) runs on the CPU; libtpu, installed beside it, never asks the metadata server.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
    devices = int(_cfg("PALLASIFY_TPUHOST_DEVICES", "1") or "1")
    rep = _report.Report(_cfg("PALLASIFY_TPUHOST_REPORT") or None, devices)
    rep.install()
    _STATE["report"] = rep
    _STATE["devices"] = devices
    cov_path = _cfg("PALLASIFY_TPUHOST_COVERAGE")
    coverage = {}
    tpu_api = {}
    if cov_path:
        try:
            with open(cov_path) as f:
                data = json.load(f)
            coverage = data.get("ops", {})
            tpu_api = data.get("tpu_api", {})
        except (OSError, ValueError) as e:
            rep.errors.append(f"coverage {cov_path}: {e}")
    else:
        rep.errors.append("PALLASIFY_TPUHOST_COVERAGE is not set: no op is checked against TorchTPU")
    _STATE["coverage"] = coverage
    _STATE["tpu_api"] = tpu_api
    _STATE["jax_op_names"] = set()
    mode = _cfg("PALLASIFY_TPUHOST_PRECISION", "highest")
    _STATE["precision_mode"] = "default" if mode == "default" else "highest"
    _STATE["precision_global"] = "DEFAULT" if mode == "default" else "HIGHEST"
    rep.precision = _STATE["precision_mode"]
    _STATE["fallback"] = "raise" if _cfg("PALLASIFY_TPUHOST_FALLBACK") == "raise" else "record"
    rep.fallback = _STATE["fallback"]

    import torch
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    cls = _make_tensor_class()
    _STATE["cls"] = cls
    tpu_mod = _make_tpu_module()
    _setup_privateuseone_for_python_backend("tpu", backend_module=tpu_mod)
    lib = torch.library.Library("aten", "IMPL")
    _STATE["lib"] = lib
    _register_factories(lib, cls)
    _register_copies(lib, cls)
    _install_torch_tpu_stub(tpu_mod)
    _watch_cuda()
    _precision_patch()
    _accelerator_patch()
    _install_compile()
    _install_dist()
    _watch_extensions()
    _patch_swap(cls)
    _install_autocast()
    if _cfg("PALLASIFY_TPUHOST_ALLOPS") == "1":
        _record_all_ops()


# The ops autocast runs in the lower precision (torch's CUDA list of lower_precision_fp ops; TorchTPU
# registers its own AutocastPrivateUse1 policy in C++, not readable here: this is the approximation).
_AUTOCAST_LOWER = (
    "mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "linear", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "prelu", "addmv", "addr",
    "chain_matmul", "linalg_multi_dot", "_scaled_dot_product_attention_math", "scaled_dot_product_attention",
)


def _install_autocast():
    """torch.autocast(device_type="tpu"): every op passes through the AutocastPrivateUse1 key (a
    fallthrough, as TorchTPU's backend has), and the matmul and convolution family runs its
    floating-point inputs in the autocast dtype (bfloat16 by default), as on CUDA."""
    torch = _torch()
    key = torch._C.DispatchKey.AutocastPrivateUse1
    fb = torch.library.Library("_", "IMPL")
    fb.fallback(torch.library.fallthrough_kernel, dispatch_key="AutocastPrivateUse1")
    lib = torch.library.Library("aten", "IMPL")
    _STATE["autocast_libs"] = (fb, lib)
    excluded = torch._C.DispatchKeySet(key)
    # TorchTPU's device module defaults its autocast dtype to bfloat16
    # (torch_tpu/_internal/device/_device_module.py: _autocast_dtype = torch.bfloat16).
    try:
        torch.set_autocast_dtype("tpu", torch.bfloat16)
    except (RuntimeError, AttributeError):
        pass

    def kernel(op):
        def run(*args, **kwargs):
            dt = torch.get_autocast_dtype("tpu")

            def cast(t):
                if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64:
                    return t.to(dt)
                return t

            with torch._C._ExcludeDispatchKeyGuard(excluded):
                return op(*_STATE["tree_map"](cast, args), **_STATE["tree_map"](cast, kwargs))

        return run

    for name in _AUTOCAST_LOWER:
        base, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, base, None)
        if packet is None:
            continue
        op = getattr(packet, overload or "default", None)
        if op is None:
            continue
        try:
            lib.impl(name, kernel(op), "AutocastPrivateUse1")
        except RuntimeError:
            pass  # already has a kernel for the key


def _patch_swap(cls):
    """module.to("tpu") on a real TorchTPU tensor moves each parameter as for any device type
    (set_data, or a new Parameter), never by swapping tensors; on the simulated host the tpu
    tensor is a wrapper subclass, which Module._apply would swap in place, and a swap is refused
    when something else holds the parameter (weight_norm's computed weight does). Module._apply
    is told a tpu tensor is no wrapper subclass, so it moves it as it would a real one."""
    import torch.nn.modules.module as module_mod

    orig = module_mod.is_traceable_wrapper_subclass

    @functools.wraps(orig)
    def is_traceable_wrapper_subclass(t):
        return False if isinstance(t, cls) else orig(t)

    module_mod.is_traceable_wrapper_subclass = is_traceable_wrapper_subclass


def _record_all_ops():
    """`pallasify ops`: every aten op the command runs, on any device, classed by the coverage
    table (a dispatch mode pushed for the whole process: ops reach it after CompositeImplicit
    decomposition, as they would reach TorchTPU)."""
    torch = _torch()
    from torch.utils._python_dispatch import TorchDispatchMode

    rep = _STATE["report"]
    coverage = _STATE["coverage"]

    class _AllOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.name()
            if func.namespace == "aten" and _NO_RECORD[0] == 0:
                rep.any_op(name, coverage.get(name, "unsupported"), _report.site())
            return func(*args, **(kwargs or {}))

    mode = _AllOps()
    mode.__enter__()  # for the process's lifetime
    _STATE["allops_mode"] = mode
    del torch


# --------------------------------------------------------------------------- C++/CUDA extensions


def _watch_extensions():
    """Functions of a torch.utils.cpp_extension module (load, load_inline) called with tpu tensors
    fail as they would on a TPU host (the C++ code sees no CUDA tensor) and are recorded."""
    from torch.utils import cpp_extension

    for name in ("load", "load_inline"):
        orig = getattr(cpp_extension, name)
        setattr(cpp_extension, name, _wrap_loader(orig))
    sys.meta_path.insert(0, _ExtFinder())


def _wrap_loader(orig):
    @functools.wraps(orig)
    def load(*args, **kwargs):
        m = orig(*args, **kwargs)
        return _guard_module(m) if isinstance(m, types.ModuleType) else m

    return load


def _is_ext_function(obj) -> bool:
    return type(obj).__name__ == "builtin_function_or_method"


def _guard_module(m):
    for name in dir(m):
        if name.startswith("_"):
            continue
        obj = getattr(m, name)
        if _is_ext_function(obj):
            setattr(m, name, _guard_fn(f"{m.__name__}.{name}", obj))
    return m


def _guard_fn(qual, fn):
    torch = _torch()

    @functools.wraps(fn)
    def g(*args, **kwargs):
        leaves = torch.utils._pytree.tree_leaves((args, kwargs))
        if any(isinstance(a, torch.Tensor) and a.device.type == "tpu" for a in leaves):
            _STATE["report"].custom_cuda(qual, _report.site())
            raise RuntimeError(
                f"{qual}: a C++/CUDA extension function called with tpu tensors: it was built for "
                "CUDA (or the CPU) and cannot run on a TPU"
            )
        return fn(*args, **kwargs)

    return g


class _ExtFinder:
    """Wraps extension modules (.so) that link libtorch when they are imported (setup.py
    CUDAExtension / CppExtension builds)."""

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery

        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except (ImportError, AttributeError, ValueError):
                spec = None
            if spec is not None:
                break
        else:
            return None
        if not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            return None
        origin = spec.origin or ""
        torch_dir = os.path.dirname(os.path.abspath(_torch().__file__))
        if origin.startswith(torch_dir) or "-packages" + os.sep + "torch" in origin:
            return None
        if not _links_torch(origin):
            return None
        spec.loader = _GuardLoader(spec.loader)
        return spec


def _links_torch(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return b"libc10" in data or b"libtorch" in data


class _GuardLoader:
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _guard_module(module)
