package validators

import (
	"context"
	"fmt"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/emulator"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// BuildReference compiles a CUDA kernel source (an isolated TU, or a .cu
// file: the emulator strips host code) with the CUDA-on-CPU emulator into
// workdir/ref.so, inside the sandbox. log holds compiler diagnostics.
func BuildReference(ctx context.Context, noSandbox bool, workdir, src string, spec *kernels.Spec) (so, log string, err error) {
	sb := &sandbox.Sandbox{Disabled: noSandbox}
	if err := sb.Check(ctx); err != nil {
		return "", "", fmt.Errorf("build reference: refusing to compile untrusted code: %w", err)
	}
	tu, probs := emulator.Prepare(emulator.StripHost(src))
	if emulator.HasErrors(probs) {
		var msgs []string
		for _, p := range probs {
			if p.Severity == "error" {
				msgs = append(msgs, p.String())
			}
		}
		return "", "", fmt.Errorf("build reference: %w: %s", emulator.ErrUnsupported, strings.Join(msgs, "; "))
	}
	k, err := emulator.KernelFromSpec(tu, spec)
	if err != nil {
		return "", "", fmt.Errorf("build reference: %w", err)
	}
	so, log, err = emulator.Compile(ctx, sb, workdir, tu, k)
	if err != nil {
		return "", log, fmt.Errorf("build reference: %w", err)
	}
	return so, log, nil
}
