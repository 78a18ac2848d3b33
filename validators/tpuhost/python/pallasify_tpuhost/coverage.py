"""TorchTPU's op coverage, read from the installed package: `python -m pallasify_tpuhost.coverage OUT.json`.

Run it in a process of its own (it imports torch_tpu, which registers `torch.tpu` and PrivateUse1 as
"tpu"; the simulated host cannot share a process with it). It needs TPU_SKIP_MDS_QUERY=1 and
TPU_WORKER_HOSTNAMES=localhost (set here when absent) so libtpu never asks the cloud metadata server.

Every op overload the dispatcher knows is classified by what the dispatcher itself computed for the
PrivateUse1 key (`torch._C._dispatch_dump_table`), never by a list typed by hand:

- native: a kernel TorchTPU registered for PrivateUse1 ("[kernel]").
- out: no kernel of its own; its PrivateUse1 entry is the structured-kernel default
  (CompositeExplicitAutogradNonFunctional: the functional and in-place forms run the op's .out
  kernel), and that .out overload is native. aten::mm (only aten::mm.out is registered) is one.
- composite: a CompositeImplicitAutograd kernel ("[math kernel]": it decomposes before reaching the
  backend) or a CompositeExplicitAutograd default ("[default backend kernel]": it redispatches to
  other ops); the ops it becomes are checked on their own as they run.
- fallback: TorchTPU's backend fallback for PrivateUse1 (csrc/eager/tpu_aten_kernels.cc) is what runs.
  With torch_tpu's cpu fallback off (its default, read below) it raises NotImplementedError
  "'<op>' is not implemented for TPU. Please file a feature request"; when on, it warns
  "... is not implemented for TPU. Falling back to CPU" and runs the CPU kernel (at::native::cpu_fallback).
- unsupported: no PrivateUse1 entry at all (nothing would run it on a TPU).
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import os
import re
import sys
import tempfile

# Before torch or torch_tpu is imported: keep libtpu off the network, and load torch_tpu by hand
# (the autoload entry point would run load() with its hardware probe).
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

_ENTRY = re.compile(r"^PrivateUse1: (?:fallthrough )?registered at (\S+) \[([^\]]+)\]$")


def _privateuse1_entry(table: str) -> tuple[str, str] | None:
    """(registered-at, kind) of the PrivateUse1 line of a dispatch table dump, or None."""
    for line in table.splitlines():
        m = _ENTRY.match(line.strip())
        if m:
            return m.group(1), m.group(2)
    return None


def _arg_sig(schema) -> list[tuple[str, str]]:
    """A schema's inputs as (name, type), the out= arguments left out."""
    return [(a.name, str(a.type)) for a in schema.arguments if not a.is_out]


def _out_variant(C, name: str) -> str | None:
    """The .out overload a functional or in-place overload's structured default runs: the overload of
    the same op (in-place: its name without the trailing _) with out= arguments and the same inputs."""
    base, _, overload = name.partition(".")
    stem = base[:-1] if base.endswith("_") and not base.endswith("__") else base
    try:
        me = C._get_schema(base, overload)
        schemas = C._jit_get_schemas_for_operator(stem)
    except RuntimeError:
        return None
    want = [(n, t.replace("(a!)", "")) for n, t in _arg_sig(me)]
    for sch in schemas:
        if not any(a.is_out for a in sch.arguments):
            continue
        got = [(n, t.replace("(a!)", "")) for n, t in _arg_sig(sch)]
        if got == want:
            return stem + ("." + sch.overload_name if sch.overload_name else "")
    return None


def classify(torch_mod) -> tuple[dict[str, str], dict]:
    """Classifies every op overload the dispatcher knows; returns (ops, facts about the fallback)."""
    C = torch_mod._C
    native = set(C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))
    entries: dict[str, tuple[str, str] | None] = {}
    for name in C._dispatch_get_all_op_names():
        try:
            entries[name] = _privateuse1_entry(C._dispatch_dump_table(name))
        except RuntimeError:
            entries[name] = None
    fallback_sites: dict[str, int] = {}
    ops: dict[str, str] = {}
    out_of: dict[str, str] = {}
    for name, entry in entries.items():
        if entry is None:
            ops[name] = "unsupported"
            continue
        where, kind = entry
        if kind == "kernel" and name in native:
            ops[name] = "native"
        elif kind == "math kernel":
            ops[name] = "composite"
        elif kind == "default backend kernel":
            if "CompositeExplicitAutogradNonFunctional" in where:
                out = _out_variant(C, name)
                if out is not None and out in native:
                    ops[name] = "out"
                    out_of[name] = out
                elif out is not None:
                    # The structured default runs an .out kernel TorchTPU does not have.
                    ops[name] = "fallback"
                    out_of[name] = out
                else:
                    ops[name] = "composite"
            else:
                ops[name] = "composite"
        elif kind == "backend fallback":
            fallback_sites[where] = fallback_sites.get(where, 0) + 1
            ops[name] = "fallback"
        else:
            ops[name] = "unsupported"
    facts = {
        "privateuse1_registrations": len(native),
        "autograd_privateuse1_registrations": len(
            C._dispatch_get_registrations_for_dispatch_key("AutogradPrivateUse1")
        ),
        "has_backend_fallback": bool(C._dispatch_has_backend_fallback(C.DispatchKey.PrivateUse1)),
        "fallback_registered_at": sorted(fallback_sites),
        "out_variants": dict(sorted(out_of.items())),
    }
    return ops, facts


def _fallback_behaviour() -> dict:
    """What TorchTPU's backend fallback does, from its execution-mode switch and its .so strings."""
    out: dict = {}
    try:
        from torch_tpu._internal.execution_mode import execution_mode_impl

        out["cpu_fallback_enabled_by_default"] = bool(execution_mode_impl._is_cpu_fallback_enabled())
        out["switch"] = "torch_tpu._internal.execution_mode.enable_cpu_fallback"
    except (ImportError, AttributeError) as e:
        out["cpu_fallback_enabled_by_default"] = None
        out["switch_error"] = str(e)
    out["raises_when_off"] = "NotImplementedError: '<op>' is not implemented for TPU. Please file a feature request"
    out["warns_when_on"] = "'<op>' is not implemented for TPU. Falling back to CPU"
    return out


def _precision_default() -> dict:
    try:
        from torch_tpu._internal.precision import precision_impl

        p = precision_impl._get_global_precision()
        return {"global_default": str(p).rsplit(".", 1)[-1]}
    except (ImportError, AttributeError) as e:
        return {"global_default": None, "error": str(e)}


def _tpu_api() -> dict[str, dict]:
    """torch.tpu's public names with the stage TorchTPU gives each (internal ones raise for user code)."""
    try:
        from torch_tpu._internal import public_api
        from torch_tpu._internal.device import _device_module
        from torch_tpu._internal.utils import annotations
    except ImportError:
        return {}
    spec = public_api._PUBLIC_MODULES.get("torch.tpu")
    strict = bool(getattr(_device_module, "_STRICT_INTERNAL_DEVICE_APIS", True))
    stage_attr = getattr(annotations, "TT_API_STAGE", None)
    reason_attr = getattr(annotations, "TT_API_STAGE_REASON", None)
    prefer_attr = getattr(annotations, "TT_API_PREFER", None)
    out: dict[str, dict] = {}
    for name in sorted(spec.exports if spec else ()):
        # Read statically: the class's own __getattr__ and descriptors would touch the runtime.
        try:
            obj = inspect.getattr_static(_device_module.TpuDeviceModule, name)
        except AttributeError:
            obj = None
        if isinstance(obj, (classmethod, staticmethod)):
            obj = obj.__func__
        info = {"stage": "stable"}
        if obj is not None and stage_attr:
            stage = getattr(obj, stage_attr, None)
            if stage is not None:
                info["stage"] = str(getattr(stage, "value", stage)).lower()
                info["reason"] = getattr(obj, reason_attr, "") if reason_attr else ""
                prefer = getattr(obj, prefer_attr, None) if prefer_attr else None
                if prefer:
                    info["prefer"] = prefer
        if info["stage"] == "internal":
            info["raises"] = strict
            msg = (f"{name} is internal to TorchTPU and can only be called by the PyTorch framework"
                   " (torch and torch_tpu).")
            reason = info.get("reason") or ""
            info["error"] = f"{msg} {reason}" if reason else msg
        out[name] = info
    return out


def build() -> dict:
    import torch
    import torch_tpu  # noqa: F401  (registers its kernels; load() is not run, no TPU needed)

    ops, facts = classify(torch)
    counts: dict[str, int] = {}
    aten_counts: dict[str, int] = {}
    for name, cls in ops.items():
        counts[cls] = counts.get(cls, 0) + 1
        if name.startswith("aten::"):
            aten_counts[cls] = aten_counts.get(cls, 0) + 1
    facts["fallback"] = _fallback_behaviour()
    return {
        "schema": _schema(),
        "torch": torch.__version__,
        "torch_tpu": importlib.metadata.version("torch-tpu"),
        "counts": counts,
        "aten_counts": aten_counts,
        "facts": facts,
        "precision": _precision_default(),
        "tpu_api": _tpu_api(),
        "ops": dict(sorted(ops.items())),
    }


def _schema() -> int:
    from pallasify_tpuhost import COVERAGE_SCHEMA

    return COVERAGE_SCHEMA


def write_atomic(path: str, data: dict) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".coverage-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m pallasify_tpuhost.coverage OUT.json", file=sys.stderr)
        return 2
    data = build()
    write_atomic(argv[0], data)
    print(json.dumps({"torch": data["torch"], "torch_tpu": data["torch_tpu"], "counts": data["counts"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
