package validators

import (
	"context"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/emulator"
)

// BuildReference compiles a CUDA kernel source (an isolated TU, or a .cu
// file: the emulator strips host code) with the CUDA-on-CPU emulator into
// workdir/ref.so, inside the sandbox. log holds compiler diagnostics. The
// build is emulator.Builder's, the one driver of the emulator that the
// pipeline's emulator check uses too.
func BuildReference(ctx context.Context, noSandbox bool, workdir, src string, spec *kernels.Spec) (so, log string, err error) {
	return (&emulator.Builder{NoSandbox: noSandbox}).Build(ctx, workdir, src, spec)
}
