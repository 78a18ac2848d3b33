import torch
from torch.utils.data import DataLoader


def loader(dataset):
    return DataLoader(dataset, batch_size=8, pin_memory=True, pin_memory_device="cuda")


def amp_state():
    dtype = torch.get_autocast_dtype("cuda")
    torch.set_autocast_dtype("cuda", torch.bfloat16)
    on = torch.is_autocast_enabled(device_type="cuda")
    ok = torch.amp.is_autocast_available("cuda")
    return dtype, on, ok


@torch.amp.custom_fwd(device_type="cuda")
def forward(ctx, x):
    return x


# Left alone: an index is not a device type; the device module's functions
# (device_count, is_available) raise on torch.tpu where torch.cuda's answer.
ok = torch.is_autocast_enabled("cuda:1")
mod = torch.get_device_module("cuda")

# On import: the tpu target writes the portable form ("tpu" raises there on
# a host without a TPU).
AMP_ON = torch.is_autocast_enabled("cuda")
