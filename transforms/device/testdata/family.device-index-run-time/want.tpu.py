import os

import torch


def run():
    """The same sites in a function body: they run when it is called, not on import."""
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    state = torch.load("ckpt.pt", map_location="tpu")
    dev = torch.device("tpu")
    dev_kw = torch.device("tpu")
    dev_cur = torch.device("tpu", torch.cuda.current_device())
    batch = batch.to("tpu", non_blocking=True)
    model = model.to("tpu")
    label = f"cuda:{local_rank}"
    eval_device = "tpu"
    for i in range(torch.cuda.device_count()):
        shards.append(weights[i].to(f"cuda:{i}"))
    print(f"running on {torch.device('tpu')}")
