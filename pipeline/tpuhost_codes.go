package pipeline

// Codes of the simulated TPU host (validators/tpuhost), raised by `pallasify
// verify --tpu` and `pallasify ops` for what a run reached that fails or
// differs on a real TPU host.
const (
	// CodeTPUOp (PTH001): an aten op with no TPU kernel reached a tpu tensor.
	CodeTPUOp = "PTH001"
	// CodeTPUCUDACall (PTH002): a CUDA-only API was called on the TPU path.
	CodeTPUCUDACall = "PTH002"
	// CodeTPUCustomOp (PTH003): a custom CUDA op was called with tpu tensors.
	CodeTPUCustomOp = "PTH003"
	// CodeTPUMixup (PTH004): a tpu tensor met a CPU tensor (or another tpu
	// index) where torch refuses the mix.
	CodeTPUMixup = "PTH004"
)

// TPUHostCodes documents the PTH codes.
func TPUHostCodes() []CodeDoc {
	return []CodeDoc{
		{CodeTPUOp, "tpu-op-missing", SevError, "An op without a TPU kernel reached a tpu tensor",
			"TorchTPU 0.2.0 registers kernels for its device (read from the installed package: native kernels, ops " +
				"reached through their .out variant, and ops that decompose into those). An op outside that set goes to " +
				"TorchTPU's backend fallback, which raises NotImplementedError unless its CPU fallback is switched on " +
				"(then it runs on the host CPU, copying tensors back and forth). The finding names the op, how often it " +
				"ran and its first Python call site: replace the op with one TorchTPU implements, move that computation " +
				"to the CPU explicitly, or enable the CPU fallback knowingly."},
		{CodeTPUCUDACall, "tpu-cuda-call", SevError, "A CUDA-only API was called on the TPU path",
			"The migrated code, run as on a TPU host, called a torch.cuda API, .cuda() or another CUDA-only call, " +
				"which fails on a host without CUDA (or silently does nothing useful). Usually a torch.cuda.is_available() " +
				"guard was rewritten into an accelerator check while its branch stayed CUDA-only: keep that branch " +
				"behind a CUDA check, or give it a TPU path."},
		{CodeTPUCustomOp, "tpu-custom-cuda-op", SevError, "A custom CUDA op was called with tpu tensors",
			"A C++/CUDA extension function (load, load_inline, CUDAExtension) or a torch.ops op with only a CUDA " +
				"kernel was reached with tpu tensors: on a TPU host it fails. Give the op a TPU path (a Pallas kernel " +
				"wired through jax_op, which the kernel stage drafts and proves) or a fallback in plain PyTorch."},
		{CodeTPUMixup, "tpu-device-mixup", SevError, "A tpu tensor met a CPU tensor",
			"An op received a tpu tensor and a CPU tensor (not a 0-dim scalar), or tensors on two tpu devices, which " +
				"torch refuses on a real device. Usually a tensor created without device= (or moved with .cpu()) meets " +
				"a model on the TPU: create it on the same device."},
	}
}
