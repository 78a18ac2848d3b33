import torch

for name in ("device_count", "is_available", "synchronize", "current_device"):
    try:
        getattr(torch.tpu, name)()
        print(name, "ok")
    except RuntimeError as e:
        print(name, "raised", e)
print("accelerator_sync", torch.accelerator.synchronize())
print("name", torch.tpu.get_device_name())
