import os

import torch


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    state = torch.load("ckpt.pt", map_location=f"cuda:{local_rank}")
    dev = torch.device("cuda", local_rank)
    dev_kw = torch.device("cuda", index=local_rank)
    dev_cur = torch.device("cuda", torch.cuda.current_device())
    batch = batch.to(f"cuda:{local_rank}", non_blocking=True)
    model = model.cuda(local_rank)
    label = f"cuda:{local_rank}"
    eval_device = f"cuda:{ local_rank }"
    for i in range(torch.cuda.device_count()):
        shards.append(weights[i].to(f"cuda:{i}"))
    print(f"running on {torch.device('cuda', local_rank)}")
