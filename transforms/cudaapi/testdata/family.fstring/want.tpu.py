import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def _tpu_memory(name, *args, **kwargs):
    """pallasify: TorchTPU has no torch.cuda-style memory statistics.

    Uses torch.accelerator.memory where it works, else returns a neutral value.
    """
    memory = getattr(torch.accelerator, "memory", None)
    call = getattr(memory, {"mem_get_info": "get_memory_info"}.get(name, name), None)
    if call is not None and torch.accelerator.is_available():
        try:
            return call(*args, **kwargs)
        except (AttributeError, NotImplementedError, RuntimeError):
            pass
    return {"memory_stats": {}, "memory_summary": "", "mem_get_info": (0, 0)}.get(
        name, None if name == "empty_cache" or name.startswith("reset_") else 0
    )


print(f"peak {_tpu_memory('max_memory_allocated') / 2**30:.2f} GiB on {(torch.get_device_module(DEVICE).get_device_name() if DEVICE.type != 'cpu' else 'cpu')}")
print(f'ok={(torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu")} n={torch.accelerator.device_count()}')
print(f"bf16={True}")
