import torch


def report(args):
    # Run time: the tpu target asks torch.tpu.
    print(torch.tpu.get_device_name())
    print(torch.tpu.get_device_name())
    props = torch.tpu.get_device_properties()
    other = torch.tpu.get_device_properties()
    return props, other
