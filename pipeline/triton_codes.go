package pipeline

// TritonCodes returns the PTR family: why the Triton rule translator
// (transforms/triton, which registers them) did not draft a kernel.
func TritonCodes() []CodeDoc { return family("PTR") }
