package emulator

import "github.com/pallasify/pallasify/transforms/codes"

// The emulator's preparation codes, registered once (hostbuild raises the
// same EMU-UNSUPPORTED and EMU-INCLUDE for whole builds).
func init() {
	codes.Register("emulator", "emulator preparation of a kernel",
		codes.Code{Code: CodeUnsupported, Name: "emu-unsupported", Severity: codes.Error,
			Title: "A construct the CUDA-on-CPU emulator cannot run",
			Doc: "The kernel's translation unit uses something the emulator has no CPU model for: inline PTX, textures " +
				"and surfaces, WMMA/tensor cores, CUB, cooperative groups, a CUDA header it does not provide. The " +
				"construct is named; the unit is not compiled, so the kernel has no reference and no draft of it can be " +
				"validated."},
		codes.Code{Code: CodeInclude, Name: "emu-include", Severity: codes.Warning,
			Title: "A local include the isolated kernel needs is not available",
			Doc: "The unit includes a header by a relative name that neither its directory nor the repository's include " +
				"folders provide. The emulator build may fail on the names that header declared; add the header to the " +
				"tree or give the include path."},
		codes.Code{Code: CodeLockstep, Name: "emu-lockstep", Severity: codes.Warning,
			Title: "Warp code relies on implicit lockstep execution",
			Doc: "Threads of a warp exchange data through shared memory without __syncwarp() or a warp primitive, " +
				"relying on pre-Volta lockstep execution. The emulator runs the threads of a block one after another " +
				"between barriers, so the reference may not be what a GPU computes; add __syncwarp() (or use shuffles) " +
				"in the original."},
	)
}
