// Package kernels finds custom CUDA kernels in a repository (.cu/.cuh files,
// load_inline/load sources, CUDAExtension sources, CuPy RawKernel/RawModule,
// Triton @triton.jit for inventory), parses them with the tree-sitter cpp
// grammar after masking CUDA keywords, isolates each __global__ kernel with
// its closure into a standalone translation unit, and infers a Spec from its
// launch sites.
package kernels
