import torch


def report(args):
    # Run time: the tpu target asks torch.tpu.
    print(torch.cuda.get_device_name())
    print(torch.cuda.get_device_name(0))
    props = torch.cuda.get_device_properties(args.local_rank)
    other = torch.cuda.get_device_properties(1)
    return props, other
