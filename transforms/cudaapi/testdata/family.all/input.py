import torch

if torch.cuda.is_available():
    torch.cuda.set_device(local_rank)
    n = torch.cuda.device_count()
    torch.cuda.synchronize()
    print(torch.cuda.get_device_name(), torch.cuda.memory_allocated())
