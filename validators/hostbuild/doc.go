// Package hostbuild builds a repository's ORIGINAL CUDA extension for the
// CPU and runs it there, recording every kernel launch.
//
// Build compiles the extension's own sources (.cpp and .cu, as its setup.py,
// torch.utils.cpp_extension.load or load_inline lists them) with g++ against
// the torch wheel's real headers and libraries, with the CUDA-on-CPU emulator
// (validators/emulator: cudaemu.h and its host prelude cudaemu_host.h)
// supplying the device side. Each `kernel<<<grid, block, shmem, stream>>>(args)`
// is rewritten into a call of cudaemu::host::launch, which runs the grid on
// the emulator and, when a capture directory is set, records the launch: the
// configuration, scalar arguments, and for each pointer the allocation it
// points into with its contents before and after and its role (input, output,
// inout). The result is a CPython extension module that runs the original op
// on CPU tensors ("cuda-as-cpu").
//
// Run executes a Python entry (a repository's pytest file, a driver script)
// with the built modules importable under their real names and the pyrt
// runtime (pyrt/sitecustomize.py) making code written for CUDA run on the
// CPU: torch.cuda.is_available() is true, tensors put on "cuda" live on the
// CPU, and cpp_extension.load/load_inline return the prebuilt modules. It
// changes where tensors live, never what the op computes.
//
// BuildProgram and RunProgram do the same for a standalone CUDA program
// (main() with cudaMalloc/cudaMemcpy and its own check).
//
// Everything untrusted (the compiler on the repository's sources, the
// repository's tests) runs inside validators/sandbox. A build that needs
// something the emulator lacks fails with a *BuildError naming the construct.
// Builds and runs are cached under a cache directory by a content hash of
// everything they read.
//
// The capture directory format and the API are the contract in
// /work/notes/capture-contract.md.
package hostbuild
