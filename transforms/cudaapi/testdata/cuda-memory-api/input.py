"""Report memory."""
import torch


def report(device):
    alloc = torch.cuda.memory_allocated(device) / 2**30
    peak = torch.cuda.max_memory_allocated() / 2**30
    free, total = torch.cuda.mem_get_info()
    print(torch.cuda.memory_summary())
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.empty_cache()
    return alloc, peak, free, total
