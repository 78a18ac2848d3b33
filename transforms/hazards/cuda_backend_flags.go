package hazards

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/tpuperf"
	"github.com/pallasify/pallasify/transforms/ts"
)

var backendFlagsExample = rule.Example{
	Before: `import torch

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
`,
}

// CudaBackendFlags reports torch.backends.cudnn.* and torch.backends.cuda.*.
var CudaBackendFlags = &rule.Rule{
	Code:    "PDX004",
	Name:    "cuda-backend-flags",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{`\bbackends\b & \bcudnn\b`, `\bbackends\b & \bcuda\b`}, // qualified torch.backends.cudnn/cuda.*
	Example: backendFlagsExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "cuDNN and CUDA backend flags (benchmark, deterministic, allow_tf32, SDPA kernels)",
		What: "Reports reads, writes and calls of `torch.backends.cudnn.*` and `torch.backends.cuda.*`, except the " +
			"statement `torch.backends.cuda.matmul.allow_tf32 = False`, which float32-matmul-precision (PTP001) " +
			"rewrites to `torch.set_float32_matmul_precision(\"highest\")`.",
		Why: "These switches configure cuDNN and cuBLAS and do nothing on TPU, which has neither. The TPU equivalents differ: " +
			"matmul precision is chosen with `torch.set_float32_matmul_precision(\"highest\")` (TorchTPU 0.2.0 maps " +
			"\"medium\", its default, onto a 1-pass bfloat16 matmul, \"high\" onto 3 passes and \"highest\" onto a " +
			"6-pass float32-accurate one; `torch.tpu.precision(...)` does the same as a context manager, which breaks " +
			"the graph under `torch.compile`) instead of `allow_tf32`; autotuning comes from " +
			"`torch.compile(backend=\"tpu\")` instead of `cudnn.benchmark`; SDPA kernel selection has no TPU switch " +
			"(the fused path wants `attn_mask=None`, `is_causal=True` and lengths divisible by 512, per field reports). Keep the " +
			"lines for CUDA runs by guarding them with `if DEVICE.type == \"cuda\":`, or drop them.",
		Safety: "Diagnostic only: the flags are harmless on TPU but say something about the numerics the author expects " +
			"(TF32 vs full f32), which only a human can carry over.",
	}, backendFlagsExample),
	Run: runCudaBackendFlags,
}

func backendFlagAdvice(q string, target rule.Target) string {
	guard := "guard with `if DEVICE.type == \"cuda\":` or drop"
	if target == rule.TPU {
		guard = "drop it"
	}
	leaf := q[strings.LastIndexByte(q, '.')+1:]
	switch {
	case strings.Contains(leaf, "tf32") || strings.Contains(leaf, "reduced_precision"):
		return "reduced-precision matmul flags do nothing on TPU; choose precision with " +
			"torch.set_float32_matmul_precision(...), which TorchTPU maps onto its own levels " +
			"(\"medium\": 1 bfloat16 pass, its default; \"high\": 3; \"highest\": 6)"
	case leaf == "benchmark" || leaf == "benchmark_limit":
		return "cuDNN autotuning has no TPU meaning; performance comes from torch.compile(backend=\"tpu\"); " + guard
	case leaf == "deterministic":
		return "cuDNN determinism has no TPU meaning; use torch.use_deterministic_algorithms(True) for a device-neutral request"
	case strings.Contains(leaf, "sdp"):
		return "CUDA SDPA kernel selection has no TPU switch; the TPU fused path needs attn_mask=None, is_causal=True " +
			"and sequence lengths divisible by 512"
	}
	return "CUDA/cuDNN backend setting with no effect on TPU; " + guard
}

func runCudaBackendFlags(p *rule.Pass) {
	kit.Nodes(p, "attribute", func(n *ts.Node) {
		if par := p.Parent(n); par != nil && par.Type() == "attribute" && p.Field(par, "object").Equal(n) {
			return // report the longest chain only
		}
		if _, ok := tpuperf.TF32OffStatement(p, n); ok {
			return // float32-matmul-precision (PTP001) rewrites it
		}
		q := kit.Qualified(p, n)
		for _, pre := range []string{"torch.backends.cudnn.", "torch.backends.cuda."} {
			if strings.HasPrefix(q, pre) {
				p.Report(kit.Finding(n, "`"+p.Text(n)+"`: "+backendFlagAdvice(q, p.Target), nil))
				return
			}
		}
	})
}
