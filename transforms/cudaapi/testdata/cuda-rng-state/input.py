import torch


def save(local_rank):
    return {
        "cpu": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(),
        "mine": torch.cuda.get_rng_state(local_rank),
        "other": torch.cuda.get_rng_state(device=2),
    }


def load(state, local_rank):
    torch.set_rng_state(state["cpu"])
    torch.cuda.set_rng_state(state["cuda"])
    torch.cuda.set_rng_state(state["mine"], local_rank)
    ok = torch.cuda.set_rng_state(state["cuda"]) is None
    if torch.cuda.is_available(): torch.cuda.set_rng_state(state["cuda"])
    return not torch.cuda.get_rng_state().numel()
