# A torch.library op with only a CUDA kernel, called with tpu tensors.
import torch

lib = torch.library.Library("fixture_cuda", "DEF")
lib.define("scale(Tensor x) -> Tensor")
lib.impl("scale", lambda x: x * 2, "CUDA")

x = torch.ones(3, device="tpu")
try:
    torch.ops.fixture_cuda.scale(x)
except NotImplementedError as e:
    print("failed", e)
