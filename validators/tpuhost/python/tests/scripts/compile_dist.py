import os

import torch
import torch.distributed as dist

m = torch.nn.Linear(4, 4).to("tpu")
f = torch.compile(m, backend="tpu", dynamic=False)
x = torch.randn(2, 4, device="tpu")
y = f(x)
print("compiled", y.device.type, torch.allclose(y.cpu(), m.cpu()(x.cpu()), atol=1e-6))
m.to("tpu")

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("tpu_dist", rank=0, world_size=1)
t = torch.ones(3, device="tpu")
dist.all_reduce(t)
print("allreduce", t.device.type, t.cpu().tolist())
dist.destroy_process_group()
