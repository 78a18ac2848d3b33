import torch.distributed as dist

# dist.init_process_group("nccl")
dist.init_process_group("gloo")
print("using nccl")
lib = "nccl"
dist.init_process_group(backend=args.backend)
