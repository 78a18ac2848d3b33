from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model)
m2 = DDP(net, device_ids=None)
m3 = MyDDP(net, device_ids=[0])
