# Code that behaves differently on a TPU host: every probe takes the TPU branch.
import torch

dev = torch.accelerator.current_accelerator()
print("accelerator", dev.type if dev is not None else None, torch.accelerator.is_available(),
      torch.accelerator.device_count())
print("cuda_available", torch.cuda.is_available())
x = torch.ones(2, 3, device=dev)
print("is_cuda", x.is_cuda)
print("device_type", x.device.type, str(x.device))
if x.device.type == "cuda":
    print("branch cuda")
elif x.device.type == "tpu":
    print("branch tpu")
else:
    print("branch cpu")
m = torch.nn.Linear(3, 4).to(dev)
y = m(x)
y.sum().backward()
print("grad_device", m.weight.grad.device.type)
print("data_on_cpu", torch.equal(y.cpu(), m.cpu()(x.cpu())))
print("current_index", torch.accelerator.current_device_index())
print("is_tpu", x.is_tpu)
