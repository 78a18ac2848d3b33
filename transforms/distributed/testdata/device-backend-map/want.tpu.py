import torch.distributed as dist

BACKENDS = {"cuda": "nccl", "tpu": "tpu_dist", "cpu": "gloo"}
_MAP = {
    'cuda': 'nccl',
    'tpu': 'tpu_dist',
    'cpu': 'gloo',
}
EXTRA = {"cuda": "nccl", **OTHER}  # want "PDS003: .*unpacks another"


def setup(device):
    dist.init_process_group(backend=BACKENDS[device.type])
    return _MAP.get(device.type, "gloo")
