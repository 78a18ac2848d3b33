import torch
import torch.backends.cudnn as cudnn
from torch.backends import cuda as tbc

torch.backends.cudnn.benchmark = True  # want "PDX004: `torch.backends.cudnn.benchmark`: cuDNN autotuning has no TPU meaning"
cudnn.deterministic = True  # want "PDX004: `cudnn.deterministic`: cuDNN determinism"
torch.backends.cuda.matmul.allow_tf32 = True  # want "PDX004: .*allow_tf32.*set_float32_matmul_precision"
tbc.enable_flash_sdp(False)  # want "PDX004: `tbc.enable_flash_sdp`: CUDA SDPA kernel selection"

with torch.backends.cuda.sdp_kernel(enable_math=False):  # want "PDX004: .*sdp_kernel"
    pass

if torch.backends.cudnn.is_available():  # want "PDX004: .*no effect on TPU"
    pass

torch.backends.mps.is_available()  # other backends are not reported
torch.set_float32_matmul_precision("high")  # device-neutral: not reported
torch.backends.cuda.matmul.allow_tf32 = False  # float32-matmul-precision (PTP001) rewrites it: not reported here
