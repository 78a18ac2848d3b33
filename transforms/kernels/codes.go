package kernels

import "github.com/pallasify/pallasify/transforms/codes"

// The PKN family (kernel discovery, isolation and specs), documented and
// registered here, where Discover raises them.
var kernelCodes = []codes.Code{
	{Code: CodeFound, Name: "kernel-found", Severity: codes.Info, Title: "A custom kernel was found and handed to the kernel stages",
		Doc: "A __global__ kernel in a .cu/.cuh file, a load_inline/load/CUDAExtension source or a CuPy RawKernel/RawModule " +
			"string. It gets a stable id (k- and 10 hex digits of sha256 of path#name), an isolated translation unit and, " +
			"when its launch can be read, an inferred KernelSpec."},
	{Code: CodeNeedsSpec, Name: "needs-spec", Severity: codes.Warning, Title: "The kernel's spec could not be inferred",
		Doc: "The launch site could not be read (no launch in host code, a launch from Python, an argument or shape the " +
			"analysis cannot follow). Write .pallasify/kernels/<id>.yaml with the KernelSpec fields; no draft of this " +
			"kernel is validated without one."},
	{Code: CodeUnsupported, Name: "unsupported-construct", Severity: codes.Warning, Title: "The kernel uses a construct isolation cannot give it",
		Doc: "A host function called from device code, cooperative groups, cub, WMMA, dynamic parallelism, or an isolated " +
			"unit that does not parse. The kernel is listed but its reference cannot be run on the emulator."},
	{Code: CodeBadSpec, Name: "bad-user-spec", Severity: codes.Error, Title: "A user spec file is invalid",
		Doc: "The .pallasify/kernels/<id>.yaml file does not decode strictly (unknown fields, wrong types) or does not fit " +
			"the kernel (parameter names or kinds, roles, dtypes, expressions over undeclared symbols). The message names " +
			"the field. The kernel is treated as needs-spec until the file is fixed."},
	{Code: CodeParse, Name: "cuda-parse", Severity: codes.Warning, Title: "A CUDA source does not parse cleanly",
		Doc: "After masking the CUDA keywords the cpp grammar still reports errors, or the file could not be read. Kernels " +
			"near the errors may be missed."},
	{Code: CodeUnresolved, Name: "unresolved-source", Severity: codes.Warning, Title: "A Python reference to CUDA source cannot be followed",
		Doc: "load_inline cuda_sources, load/CUDAExtension sources or a CuPy code argument is an f-string, a computed value, " +
			"a missing file or a path outside the repository."},
	{Code: CodeInventory, Name: "triton-inventory", Severity: codes.Info, Title: "A Triton kernel was listed only",
		Doc: "A @triton.jit function no kernel[grid](...) launch reaches (a helper inlined into the kernels that call it, " +
			"or dead code) is listed with a class guess and not drafted. Launched Triton kernels go through the Triton " +
			"stages instead: drafted by the Triton rules (PTR codes say why not), proven against Triton's interpreter, " +
			"wired at their launches."},
	{Code: CodeOutside, Name: "source-outside", Severity: codes.Warning, Title: "A kernel source or header lies outside the repository",
		Doc: "A source a Python build call names, a local #include or a user spec file resolves, through a symlink, to a " +
			"path outside the repository (or to a FIFO or device). Discovery runs outside the sandbox, so it does not read " +
			"it: its kernels are not listed and its code reaches no isolated unit and no LLM prompt. Copy the file into " +
			"the repository to have it analysed."},
	{Code: CodeInternal, Name: "kernel-analysis-failed", Severity: codes.Error, Title: "Kernel analysis failed on this file",
		Doc: "The analysis met code it did not expect. The kernel (or Python file) is left out of the inventory and the " +
			"run continues. Please report it with the file."},
}

func init() { codes.Register("kernel", "kernel discovery", kernelCodes...) }
