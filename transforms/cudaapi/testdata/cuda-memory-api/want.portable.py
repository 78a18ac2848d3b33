"""Report memory."""
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def _accelerator_memory(name, *args, **kwargs):
    """pallasify: torch.cuda's memory call `name` on DEVICE's backend.

    Returns a neutral value where the backend has none.
    """
    if DEVICE.type != "cpu":
        call = getattr(torch.get_device_module(DEVICE), name, None)
        if call is None:
            memory = getattr(torch.accelerator, "memory", None)
            call = getattr(memory, {"mem_get_info": "get_memory_info"}.get(name, name), None)
        if call is not None:
            try:
                return call(*args, **kwargs)
            except (AttributeError, NotImplementedError, RuntimeError):
                pass
    return {"memory_stats": {}, "memory_summary": "", "mem_get_info": (0, 0)}.get(
        name, None if name == "empty_cache" or name.startswith("reset_") else 0
    )


def report(device):
    alloc = _accelerator_memory("memory_allocated", device) / 2**30
    peak = _accelerator_memory("max_memory_allocated") / 2**30
    free, total = _accelerator_memory("mem_get_info")
    print(_accelerator_memory("memory_summary"))
    _accelerator_memory("reset_peak_memory_stats")
    _accelerator_memory("empty_cache")
    return alloc, peak, free, total
