import torch
import torch_xla
import torch_xla.core.xla_model as xm

device = torch.device("tpu")  # want:portable "PXL001: .*xla_device.*tpu only"
dev0 = torch.device("tpu")  # want:portable "PXL001: `torch_xla.device\\(\\)`"
dev3 = xm.xla_device(3)  # want "PXL001: .*one chip per process"
model = model.to(device)
