import torch

print(f"peak {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB on {torch.cuda.get_device_name()}")
print(f'ok={torch.cuda.is_available()} n={torch.cuda.device_count()}')
print(f"bf16={torch.cuda.is_bf16_supported()}")
