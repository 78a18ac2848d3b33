package hazards

import (
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaEnvExample = rule.Example{
	Before: `import os

os.environ["CUDA_VISIBLE_DEVICES"] = "0"
os.environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")
`,
}

var cudaEnvAdvice = map[string]string{
	"CUDA_VISIBLE_DEVICES": "TorchTPU ignores it; each process owns one chip and sees it as tpu:0 under torchrun; " +
		"the nearest analogue is TPU_VISIBLE_CHIPS (inferred), set before `import torch`",
	"CUDA_LAUNCH_BLOCKING": "use TPU_LAUNCH_BLOCKING=1 for synchronous execution; it is read once at backend init, " +
		"so set it before `import torch`",
	"CUDA_DEVICE_ORDER":              "no TPU meaning; drop it",
	"PYTORCH_CUDA_ALLOC_CONF":        "CUDA caching-allocator settings have no effect on TPU; drop it",
	"PYTORCH_NO_CUDA_MEMORY_CACHING": "CUDA caching-allocator settings have no effect on TPU; drop it",
	"CUDA_HOME":                      "the CUDA toolkit is not used on TPU; custom kernels go through the kernel stage",
}

// CudaEnvVar reports CUDA environment variables named in string literals.
var CudaEnvVar = &rule.Rule{
	Code:    "PDX008",
	Name:    "cuda-env-var",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{"CUDA_", "NCCL_"},
	Example: cudaEnvExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "CUDA environment variables (CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, NCCL_*, ...)",
		What: "Reports string literals naming CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, CUDA_DEVICE_ORDER, CUDA_HOME, " +
			"PYTORCH_CUDA_ALLOC_CONF or an NCCL_* variable, whether as an `os.environ` key or inside a `NAME=value` " +
			"command string. Docstrings and comments are ignored.",
		Why: "TorchTPU reads its own variables: `TPU_LAUNCH_BLOCKING=1` replaces CUDA_LAUNCH_BLOCKING, " +
			"device selection is one chip per process (TPU_VISIBLE_CHIPS is the nearest analogue of " +
			"CUDA_VISIBLE_DEVICES), NCCL is not used (the process group backend is `tpu_dist`), and all of them are " +
			"read once at backend init, so setting them after `import torch` has no effect.",
		Safety: "Diagnostic only: the variables are also read by launch scripts outside the Python code.",
	}, cudaEnvExample),
	Run: runCudaEnvVar,
}

// envAdvice returns the CUDA variables s names ("NAME" or "NAME=value"
// inside a command line), in a stable order, with their advice.
func envAdvice(s string) []string {
	names := make([]string, 0, len(cudaEnvAdvice))
	for name := range cudaEnvAdvice {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		if s == name || strings.Contains(s, name+"=") {
			out = append(out, name+": "+cudaEnvAdvice[name])
		}
	}
	if strings.HasPrefix(s, "NCCL_") && !strings.ContainsAny(s, " \t=") {
		out = append(out, s+": NCCL is not used on TPU (the process group backend is tpu_dist); drop it")
	}
	return out
}

func runCudaEnvVar(p *rule.Pass) {
	// The walk reads the flattened tree (the same nodes in the same order
	// as ts.Walk, without crossing into C per node).
	f := p.Tree.Flat()
	f.Walk(func(i int) bool {
		switch f.Types[i] {
		case "comment":
			return false
		case "string":
			n := f.Nodes[i]
			if par := n.Parent(); par != nil && par.Type() == "expression_statement" && par.NamedChildCount() == 1 {
				return false // docstring or bare string statement
			}
			var b strings.Builder
			for _, c := range ts.Children(n) {
				if c.Type() == "string_content" {
					b.WriteString(p.Text(c))
				}
			}
			if msgs := envAdvice(b.String()); len(msgs) > 0 {
				p.Report(kit.Finding(n, strings.Join(msgs, "; "), nil))
			}
			return false
		}
		return true
	})
}
