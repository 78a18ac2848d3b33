package hazards

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaDepExample = rule.Example{
	Before: `import bitsandbytes as bnb
from flash_attn import flash_attn_func
`,
}

// cudaOnlyModules maps a top-level module to what to use instead.
var cudaOnlyModules = map[string]string{
	"bitsandbytes": "its 8/4-bit kernels are CUDA-only; on TPU load weights in bf16 (torch_dtype=torch.bfloat16) and " +
		"drop load_in_8bit/load_in_4bit and bnb optimizers (use torch.optim)",
	"apex": "use torch.amp.autocast for mixed precision, torch.nn.LayerNorm/RMSNorm for fused norms and torch.optim " +
		"for fused optimizers",
	"flash_attn": "use torch.nn.functional.scaled_dot_product_attention; the TPU fused path wants attn_mask=None, " +
		"is_causal=True and sequence lengths divisible by 512",
	"xformers":           "use torch.nn.functional.scaled_dot_product_attention",
	"triton":             "Triton kernels are CUDA-only here; they are handed to the kernel stage for a Pallas (jax_op) replacement",
	"cupy":               "CuPy arrays and kernels are CUDA-only; use torch ops, or let the kernel stage port raw kernels to Pallas",
	"pycuda":             "PyCUDA is CUDA-only; use torch ops, or let the kernel stage port the kernels to Pallas",
	"transformer_engine": "NVIDIA Transformer Engine (FP8) is CUDA-only; train in bf16 on TPU",
	"tensorrt":           "TensorRT is NVIDIA-only; compile with torch.compile(backend=\"tpu\", dynamic=False)",
	"torch_tensorrt":     "TensorRT is NVIDIA-only; compile with torch.compile(backend=\"tpu\", dynamic=False)",
	"pynvml":             "NVML is NVIDIA-only; query TPUs with torch.accelerator / torch.tpu.get_device_properties()",
	"nvidia_smi":         "NVML is NVIDIA-only; query TPUs with torch.accelerator / torch.tpu.get_device_properties()",
	"torch.cuda.nccl": "torch.cuda.nccl calls NCCL directly, which exists only with CUDA; use the torch.distributed " +
		"collectives (all_reduce, broadcast, ...) on a process group, whose backend the distributed rules make " +
		"\"tpu_dist\" on TPU",
	"torch_xla": "PyTorch/XLA must not be mixed with TorchTPU in one process: use the device \"tpu\" instead of " +
		"xm.xla_device(), drop xm.mark_step(), use the \"tpu_dist\" process-group backend instead of \"xla\", and " +
		"rewrite make_kernel_from_pallas kernels to jax_op",
}

// cudaDepNeedles are the module names as whole words: an import names the
// module itself (is_flash_attn_available does not).
// The module is the first name of an import's dotted_name (a relative
// import is not one), so no "." comes before it (`\m`); an import is code,
// never a string literal (`\q`). nccl is the exception: torch.cuda.nccl.
var cudaDepNeedles = []string{`\q\m\bbitsandbytes\b`, `\q\m\bapex\b`, `\q\m\bflash_attn\b`, `\q\m\bxformers\b`, `\q\m\btriton\b`,
	`\q\m\bcupy\b`, `\q\m\bpycuda\b`, `\q\m\btransformer_engine\b`, `\q\m\btensorrt\b`, `\q\m\btorch_tensorrt\b`, `\q\m\bpynvml\b`,
	`\q\m\bnvidia_smi\b`, `\q\m\btorch_xla\b`, `\q\bnccl\b`}

// CudaOnlyDependency reports imports of CUDA-only packages.
var CudaOnlyDependency = &rule.Rule{
	Code:    "PDX007",
	Name:    "cuda-only-dependency",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: cudaDepNeedles,
	Example: cudaDepExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Import of a CUDA-only dependency (bitsandbytes, apex, flash_attn, triton, torch_xla, ...)",
		What: "Reports `import` and `from ... import` statements of bitsandbytes, apex, flash_attn, xformers, triton, " +
			"cupy, pycuda, transformer_engine, tensorrt, torch_tensorrt, pynvml, torch.cuda.nccl and torch_xla, with the replacement to use.",
		Why: "These packages ship CUDA kernels or talk to NVIDIA drivers, so the import (or the first call) fails on a " +
			"TPU host. torch_xla is TPU software but must not be mixed with TorchTPU in one process.",
		Safety: "Diagnostic only: replacing a library changes the model's numerics or APIs.",
	}, cudaDepExample),
	Run: runCudaOnlyDependency,
}

func runCudaOnlyDependency(p *rule.Pass) {
	report := func(n *ts.Node, mod string) {
		head, _, _ := strings.Cut(mod, ".")
		if mod == "torch.cuda.nccl" || strings.HasPrefix(mod, "torch.cuda.nccl.") {
			head = "torch.cuda.nccl"
		}
		if advice, ok := cudaOnlyModules[head]; ok {
			p.Report(kit.Finding(n, "CUDA-only dependency `"+head+"` imported: "+advice, nil))
		}
	}
	// The index lists every import statement outside strings and comments,
	// in source order, so no walk over the whole tree is needed.
	ix := p.Tree.Index()
	for i, n := range ix.Nodes {
		switch ix.Types[i] {
		case "import_statement":
			for _, c := range ts.Children(n) {
				switch c.Type() {
				case "dotted_name":
					report(c, p.Text(c))
				case "aliased_import":
					report(c, p.Text(c.ChildByFieldName("name")))
				}
			}
		case "import_from_statement":
			if m := n.ChildByFieldName("module_name"); m != nil && m.Type() == "dotted_name" {
				report(n, p.Text(m))
				if p.Text(m) == "torch.cuda" {
					for _, c := range ts.Children(n) {
						name := c
						if c.Type() == "aliased_import" {
							name = c.ChildByFieldName("name")
						}
						if !c.Equal(m) && name != nil && p.Text(name) == "nccl" {
							report(n, "torch.cuda.nccl") // from torch.cuda import nccl
						}
					}
				}
			}
		}
	}
}
