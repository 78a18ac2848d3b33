import torch


def save(local_rank):
    return {
        "cpu": torch.get_rng_state(),
        "cuda": torch.accelerator.random.get_rng_state(),
        "mine": torch.accelerator.random.get_rng_state(),
        "other": torch.cuda.get_rng_state(device=2),
    }


def load(state, local_rank):
    torch.set_rng_state(state["cpu"])
    torch.tpu.set_rng_state(state["cuda"])
    torch.tpu.set_rng_state(state["mine"])
    ok = torch.tpu.set_rng_state(state["cuda"]) is None
    if torch.cuda.is_available(): torch.tpu.set_rng_state(state["cuda"])
    return not torch.accelerator.random.get_rng_state().numel()
