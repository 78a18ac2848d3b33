from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="row_bias",
    packages=["row_bias"],
    ext_modules=[CUDAExtension("row_bias._C", ["row_bias/csrc/row_bias.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
