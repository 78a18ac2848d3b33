BACKENDS = {"cuda": "nccl", "tpu": "tpu_dist", "cpu": "gloo"}
NAMES = {"cuda": "NVIDIA", "nccl": "nccl"}
KERNELS = {"cuda": "nccl_kernel"}
# {"cuda": "nccl"} in a comment
