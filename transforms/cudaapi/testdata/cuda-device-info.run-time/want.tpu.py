import torch


def report(args):
    # Run time: the tpu target asks torch.tpu.
    print(torch.tpu.get_device_name())
    print(torch.tpu.get_device_name())
    props = torch.tpu.get_device_properties()
    other = torch.cuda.get_device_properties(1)
    return props, other
