// Package hazards holds the diagnostic-only rules (codes PDX…): CUDA idioms
// that have no mechanical TorchTPU equivalent, so pallasify reports them —
// and with --mark leaves a "# pallasify: PDXnnn …" comment above them — with
// a precise message saying what to do instead.
//
// The rules fix nothing, so both targets see the same findings. Custom CUDA
// kernels (load_inline, load, CUDAExtension, Triton, CuPy) are reported here
// at their Python call sites and handed to the kernel stage. Jupyter
// notebooks are not migrated yet; Notebook reports one file-level finding for
// a .ipynb file.
package hazards

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name shown in rule listings.
const Family = "hazards"

// Rules is the family in registry order.
var Rules = []*rule.Rule{
	IsCudaCheck,
	CudaEventTiming,
	CudaStreams,
	CudaBackendFlags,
	OptimizerCapturable,
	CustomCudaKernel,
	CudaOnlyDependency,
	CudaEnvVar,
	CudaGraphs,
	Nvtx,
	JupyterNotebook,
	CudaCPUTest,
	CudaAPIMocked,
	LightningAccelerator,
}
