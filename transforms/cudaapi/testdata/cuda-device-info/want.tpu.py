import torch

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


print(torch.get_device_module(DEVICE).get_device_name() if DEVICE.type != "cpu" else "cpu")
print(torch.get_device_module(DEVICE).get_device_name(0) if DEVICE.type != "cpu" else "cpu")
props = torch.get_device_module(DEVICE).get_device_properties(device_at(args.local_rank))
other = torch.cuda.get_device_properties(1)
