import triton
import triton.language as tl
from torch.utils import cpp_extension
from torch.utils.cpp_extension import load_inline, CUDAExtension

CUDA_SRC = "__global__ void k(float* x) {}"

ext = load_inline(name="scale", cpp_sources="", cuda_sources=CUDA_SRC, functions=["scale"])  # want "PDX006: custom CUDA kernel \\(load_inline\\).*kernel stage"
ops = cpp_extension.load(name="ops", sources=["ops.cpp", "ops_kernel.cu"])  # want "PDX006: custom CUDA kernel \\(load\\)"
spec = CUDAExtension("fused", ["fused.cpp", "fused_kernel.cu"])  # want "PDX006: .*\\(cuda-extension\\)"


@triton.jit  # want "PDX006: custom CUDA kernel \\(triton\\).*`add_kernel`"
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def load(path):  # a local function named load: not reported
    return open(path).read()


data = load("x.txt")
