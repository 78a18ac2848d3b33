import torch
import torch.distributed as dist
from torch.distributed import Backend


class Strategy:
    def barrier(self):
        if torch.distributed.get_backend() == "nccl":
            torch.distributed.barrier(device_ids=[self.root_device.index])
        else:
            torch.distributed.barrier()

    def sync(self, t):
        backend = dist.get_backend()
        if backend != "nccl":
            return t
        if self.backend in ("nccl", "gloo"):
            t = t.cuda()
        return t


def reduce(group, args):
    if dist.get_backend(group) == Backend.NCCL:
        torch.cuda.synchronize()
    if args.dist_backend == "nccl":
        print("nccl")


# Not backend checks: a library name, a device string, a message.
lib = "nccl"
if lib == "nccl":
    print("using nccl")
if args.device == "cuda":
    pass
