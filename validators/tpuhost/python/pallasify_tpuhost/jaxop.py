"""torch.tpu.pallas.jax_op on the simulated TPU host: the JAX function runs on the CPU.

Same contract as TorchTPU 0.2.0's (torch_tpu/_internal/pallas/pallas.py): `jax_op(name, fn=None, /,
*, donate_argnums=None, mesh=None, input_partition_specs=None, output_partition_specs=None)` returns
a torch.library CustomOpDef (a decorator when fn is None); name has exactly one "::"; every
parameter of fn is annotated; tensor parameters (jax.Array / torch.Tensor, or sequences of them)
are the op's tensors, the others static. Calls run fn under Pallas's TPU interpret mode
(`pltpu.force_tpu_interpret_mode`), so a pallas_call written for the TPU (interpret=False) runs on
the CPU as it would compile for the TPU; tensors cross through DLPack.
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing


def _strip_optional(t):
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(t)) == 2:
            return args[0], True
    return t, False


def _is_tensor(t) -> bool:
    import jax
    import torch

    return t in (jax.Array, torch.Tensor, "jax.Array", "Array", "torch.Tensor", "Tensor")


def _seq_elem(t):
    origin = typing.get_origin(t)
    if origin in (list, tuple, collections.abc.Sequence):
        args = typing.get_args(t)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return None
        return args[0] if args else None
    return None


def _param_type(ann) -> str:
    base, opt = _strip_optional(ann)
    q = "?" if opt else ""
    if _is_tensor(base):
        return "Tensor" + q
    elem = _seq_elem(base)
    if elem is not None:
        e = _param_type(elem)
        return e + "[]" + q
    if base in (int, "int") or (isinstance(base, type) and issubclass(base, int) and base is not bool):
        return "SymInt" + q
    if base in (float, "float"):
        return "float" + q
    if base in (bool, "bool"):
        return "bool" + q
    if base in (str, "str"):
        return "str" + q
    import torch

    if base is torch.dtype:
        return "ScalarType" + q
    if typing.get_origin(base) in (typing.Union, types.UnionType) and set(typing.get_args(base)) <= {int, float, bool}:
        return "Scalar" + q
    raise ValueError(f"Unsupported argument type annotation for jax_op: {ann}")


def _ret_type(ann) -> str:
    if ann is None or ann is type(None):
        return "()"
    if _is_tensor(ann):
        return "Tensor"
    base, opt = _strip_optional(ann)
    if opt:
        return _ret_type(base) + "?"
    if typing.get_origin(ann) is tuple:
        args = typing.get_args(ann)
        if len(args) == 2 and args[1] is Ellipsis:
            return _ret_type(args[0]) + "[]"
        return "(" + ", ".join(_ret_type(a) for a in args) + ")"
    elem = _seq_elem(ann)
    if elem is not None:
        return _ret_type(elem) + "[]"
    if ann in (int,):
        return "SymInt"
    if ann in (float,):
        return "float"
    if ann in (bool,):
        return "bool"
    raise ValueError(f"Unsupported return type annotation: {ann}")


def _default(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return repr(v).replace("'", '"')
    return "None"


def _schema(sig: inspect.Signature) -> tuple[str, list[str], list[str]]:
    pos, kw, names_pos, names_kw = [], [], [], []
    for p in sig.parameters.values():
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"Missing argument type annotation for JAX function: {sig}.")
        t = _param_type(p.annotation)
        s = f"{t} {p.name}"
        if p.default is not inspect.Parameter.empty:
            if p.default is None and not t.endswith("?"):
                s = f"{t}? {p.name}"
            s += "=" + _default(p.default)
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            kw.append(s)
            names_kw.append(p.name)
        else:
            pos.append(s)
            names_pos.append(p.name)
    params = ", ".join(pos + (["*"] + kw if kw else []))
    ret = _ret_type(sig.return_annotation) if sig.return_annotation is not inspect.Signature.empty else "Tensor"
    return f"({params}) -> {ret}", names_pos, names_kw


def _to_jax(x):
    import jax
    import torch

    if isinstance(x, torch.Tensor):
        t = x.detach().contiguous()
        if t.dtype == torch.bool:
            return jax.numpy.asarray(t.numpy())
        return jax.dlpack.from_dlpack(t)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_jax(a) for a in x)
    if isinstance(x, torch.dtype):
        return {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
                torch.int32: "int32", torch.int64: "int64", torch.bool: "bool"}.get(x, x)
    return x


def _to_torch(x):
    import jax
    import numpy as np
    import torch

    if isinstance(x, jax.Array):
        if x.dtype == jax.numpy.bool_:
            return torch.from_numpy(np.asarray(x).copy())
        return torch.from_dlpack(x).clone()
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(a) for a in x)
    return x


def jax_op(name, fn=None, /, *, donate_argnums=None, mesh=None, input_partition_specs=None,
           output_partition_specs=None):
    if "::" not in name:
        raise ValueError(f"Op name {name} does not contain a namespace.")
    if len(name.split("::")) != 2:
        raise ValueError(f"Op name {name} must have exactly one '::' separator.")

    def dec(fn):
        import torch

        from pallasify_tpuhost import runtime

        sig = inspect.signature(inspect.unwrap(fn), eval_str=True)
        schema, names_pos, names_kw = _schema(sig)

        def impl(*args, **kwargs):
            import jax
            from jax.experimental.pallas import tpu as pltpu

            bound = dict(zip(names_pos, args, strict=False))
            bound.update(kwargs)
            pos = [_to_jax(bound[n]) for n in names_pos if n in bound]
            kws = {n: _to_jax(bound[n]) for n in names_kw if n in bound}
            with jax.default_device(jax.devices("cpu")[0]), pltpu.force_tpu_interpret_mode():
                out = fn(*pos, **kws)
            return _to_torch(out)

        impl.__signature__ = inspect.Signature(
            [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
        )
        op = torch.library.custom_op(name, impl, mutates_args=(), schema=schema)

        def fake(*args, **kwargs):
            import jax

            bound = dict(zip(names_pos, args, strict=False))
            bound.update(kwargs)
            dev = next((a.device for a in torch.utils._pytree.tree_leaves((args, kwargs))
                        if isinstance(a, torch.Tensor)), torch.device("meta"))

            def spec(x):
                if isinstance(x, torch.Tensor):
                    return jax.ShapeDtypeStruct(tuple(x.shape), _to_jax(x.dtype))
                return x

            pos = [torch.utils._pytree.tree_map(spec, bound[n]) for n in names_pos if n in bound]
            kws = {n: torch.utils._pytree.tree_map(spec, bound[n]) for n in names_kw if n in bound}
            static = {i for i, n in enumerate(names_pos) if not _is_tensor_like(bound.get(n))}
            from jax.experimental.pallas import tpu as pltpu

            with pltpu.force_tpu_interpret_mode():
                shapes = jax.eval_shape(
                    lambda *dyn: fn(*_merge(dyn, pos, static), **kws),
                    *[p for i, p in enumerate(pos) if i not in static],
                )
            return torch.utils._pytree.tree_map(
                lambda s: torch.empty(s.shape, dtype=_torch_dtype(s.dtype), device=dev)
                if hasattr(s, "shape") else s,
                shapes,
            )

        op.register_fake(fake)
        runtime._STATE.setdefault("jax_op_names", set()).add(name)
        return op

    if fn is None:
        return dec
    return dec(fn)


def _is_tensor_like(x) -> bool:
    import torch

    if isinstance(x, torch.Tensor):
        return True
    if isinstance(x, (list, tuple)) and x and all(isinstance(a, torch.Tensor) for a in x):
        return True
    return False


def _merge(dyn, pos, static):
    it = iter(dyn)
    return [pos[i] if i in static else next(it) for i in range(len(pos))]


def _torch_dtype(d):
    import numpy as np
    import torch

    name = np.dtype(d).name
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
            "int32": torch.int32, "int64": torch.int64, "bool": torch.bool, "int8": torch.int8,
            "uint8": torch.uint8, "int16": torch.int16, "float64": torch.float64}[name]
