import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


def save(local_rank):
    return {
        "cpu": torch.get_rng_state(),
        "cuda": torch.accelerator.random.get_rng_state() if DEVICE.type != "cpu" else torch.get_rng_state(),
        "mine": torch.accelerator.random.get_rng_state(device_at(local_rank)) if DEVICE.type != "cpu" else torch.get_rng_state(),
        "other": torch.accelerator.random.get_rng_state(device_at(2)) if DEVICE.type != "cpu" else torch.get_rng_state(),
    }


def load(state, local_rank):
    torch.set_rng_state(state["cpu"])
    if DEVICE.type != "cpu":
        torch.get_device_module(DEVICE).set_rng_state(state["cuda"])
    if DEVICE.type != "cpu":
        torch.get_device_module(DEVICE).set_rng_state(state["mine"], device_at(local_rank))
    ok = (torch.get_device_module(DEVICE).set_rng_state(state["cuda"]) if DEVICE.type != "cpu" else None) is None
    if torch.cuda.is_available(): torch.get_device_module(DEVICE).set_rng_state(state["cuda"]) if DEVICE.type != "cpu" else None
    return not (torch.accelerator.random.get_rng_state() if DEVICE.type != "cpu" else torch.get_rng_state()).numel()
