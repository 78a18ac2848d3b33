import torch
from torch.utils.data import DataLoader

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def loader(dataset):
    return DataLoader(dataset, batch_size=8, pin_memory=True, pin_memory_device="tpu")


def amp_state():
    dtype = torch.get_autocast_dtype("tpu")
    torch.set_autocast_dtype("tpu", torch.bfloat16)
    on = torch.is_autocast_enabled(device_type="tpu")
    ok = torch.amp.is_autocast_available("tpu")
    return dtype, on, ok


@torch.amp.custom_fwd(device_type="tpu")
def forward(ctx, x):
    return x


# Left alone: an index is not a device type; the device module's functions
# (device_count, is_available) raise on torch.tpu where torch.cuda's answer.
ok = torch.is_autocast_enabled("cuda:1")
mod = torch.get_device_module("cuda")

# On import: the tpu target writes the portable form ("tpu" raises there on
# a host without a TPU).
AMP_ON = torch.is_autocast_enabled(DEVICE.type)
