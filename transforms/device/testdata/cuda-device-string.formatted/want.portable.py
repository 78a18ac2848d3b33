import torch
from torch.distributed.device_mesh import init_device_mesh

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


def setup(gpu, rank, n):
    device = device_at(gpu)
    x = torch.zeros(3, device=device_at(rank))
    y = x.to(device_at(gpu))
    ckpt = torch.load("m.pt", map_location={'cuda:%d' % 0: str(device_at(rank))})
    state = torch.load("s.pt", {"cuda:0": str(device_at(1))})
    mesh = init_device_mesh(DEVICE.type, (n,))
    mesh2 = init_device_mesh(device_type=DEVICE.type, mesh_shape=(n,))
    label = "cuda:{} of {}".format(gpu, n)
    pair = "cuda:%d" % (gpu, )
    return device, y, ckpt, state, mesh, mesh2, label, pair
