import torch
from torch.distributed.device_mesh import init_device_mesh


def setup(gpu, rank, n):
    device = torch.device('tpu')
    x = torch.zeros(3, device="tpu")
    y = x.to("tpu")
    ckpt = torch.load("m.pt", map_location={'cuda:%d' % 0: 'tpu'})
    state = torch.load("s.pt", {"cuda:0": "cuda:1"})
    mesh = init_device_mesh("tpu", (n,))
    mesh2 = init_device_mesh(device_type="tpu", mesh_shape=(n,))
    label = "cuda:{} of {}".format(gpu, n)
    pair = "cuda:%d" % (gpu, )
    return device, y, ckpt, state, mesh, mesh2, label, pair
