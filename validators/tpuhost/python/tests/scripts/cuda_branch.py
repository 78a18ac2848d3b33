# A CUDA-only branch reached on the TPU path: the rewritten probe says "an accelerator is here"
# and the code behind it is CUDA's.
import torch

if torch.accelerator.is_available():
    try:
        s = torch.cuda.Stream()  # CUDA-only: fails on a TPU host
    except Exception as e:
        print("stream failed", type(e).__name__)
    try:
        torch.cuda.get_device_properties(0)
    except Exception as e:
        print("props failed", type(e).__name__)
if torch.cuda.is_available():
    print("cuda branch taken")
else:
    print("cuda branch skipped")
torch.ones(2).cuda()  # uncaught: the process dies as on a host without CUDA
