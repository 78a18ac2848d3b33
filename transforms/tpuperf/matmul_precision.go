package tpuperf

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var matmulPrecisionExample = rule.Example{
	Before: `import torch

torch.backends.cuda.matmul.allow_tf32 = False
`,
	Portable: `import torch

torch.set_float32_matmul_precision("highest")
`,
	TPU: `import torch

torch.set_float32_matmul_precision("highest")
`,
}

// tf32Flag is the cuBLAS TF32 switch whose False form PTP001 rewrites.
const tf32Flag = "torch.backends.cuda.matmul.allow_tf32"

// MatmulPrecision keeps float32 matmuls in float32 on TorchTPU where the
// code asks for it, and reports a precision request that costs TPU time.
var MatmulPrecision = &rule.Rule{
	Code:   "PTP001",
	Name:   "float32-matmul-precision",
	Family: Family,
	Safety: rule.Safe,
	// A rewrite is the statement `<...>.allow_tf32 = False` (the name is
	// its last component, never aliased); a report is a call of
	// set_float32_matmul_precision, whose name is in the call or its import.
	Needles: []string{"allow_tf32", "set_float32_matmul_precision"},
	Example: matmulPrecisionExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "float32 matmul precision: TorchTPU runs float32 matmuls as one bfloat16 pass by default",
		What: "Rewrites the statement `torch.backends.cuda.matmul.allow_tf32 = False` to " +
			"`torch.set_float32_matmul_precision(\"highest\")`, on both targets. Reports " +
			"`torch.set_float32_matmul_precision(\"high\")` without a fix. `set_float32_matmul_precision(\"highest\")` " +
			"and `(\"medium\")` are not reported: TorchTPU honours them as they are. Other CUDA and cuDNN backend " +
			"flags (`allow_tf32 = True`, `torch.backends.cudnn.allow_tf32`, `fp32_precision`) are reported by " +
			"cuda-backend-flags (PDX004).",
		Why: "On TorchTPU, float32 matrix multiplications and convolutions run on the MXU as a single bfloat16 " +
			"pass unless asked otherwise, while a " +
			"CUDA build computes them in full float32 by default. TorchTPU 0.2.0 maps " +
			"`torch.set_float32_matmul_precision` onto its own precision setting for the whole process: " +
			"\"medium\" is one bfloat16 pass (`torch.tpu.Precision.DEFAULT`), \"high\" three passes " +
			"(`torch.tpu.Precision.HIGH`), \"highest\" six passes, float32-accurate (`torch.tpu.Precision.HIGHEST`); " +
			"`with torch.tpu.precision(torch.tpu.Precision.HIGHEST):` does the same for one block of code (it " +
			"breaks the graph under torch.compile). The " +
			"cuBLAS switch `torch.backends.cuda.matmul.allow_tf32` does nothing on TPU, so code that turns TF32 " +
			"off to get exact float32 results (numerics tests, comparisons against float64 or CPU references) " +
			"silently gets bfloat16 there; `set_float32_matmul_precision(\"highest\")` says the same thing on " +
			"every device. Conversely, `set_float32_matmul_precision(\"high\")` is a speed setting on CUDA (TF32) " +
			"but selects three MXU passes on TPU, three times the matmul work of the TPU default: on TPU, " +
			"\"medium\" is the fast setting (`torch.set_float32_matmul_precision(\"medium\" if DEVICE.type == " +
			"\"tpu\" else \"high\")` keeps both).",
		Safety: "Safe: on CUDA, `allow_tf32 = False` and `set_float32_matmul_precision(\"highest\")` set the same " +
			"cuBLAS mode (the default of a CUDA build), and on TPU the rewrite gives what the flag asked for: " +
			"float32-accurate matmuls. They cost six MXU passes instead of one, which is why the rewrite is " +
			"limited to code that turned TF32 off. Two differences remain: `set_float32_matmul_precision` " +
			"also sets the CPU (oneDNN) matmul precision, which only matters where the code lowered it before; " +
			"and a later `allow_tf32 = old` that restores the flag does not restore the TPU setting (PDX004 " +
			"reports it). The \"high\" finding has no fix: whether to trade the precision for speed on TPU is " +
			"the author's call.",
	}, matmulPrecisionExample),
	Run: runMatmulPrecision,
}

// TF32OffStatement reports whether the attribute n is the target of a
// statement `torch.backends.cuda.matmul.allow_tf32 = False` (any import
// spelling), the one PTP001 rewrites; it returns the statement. PDX004
// leaves that statement to PTP001.
func TF32OffStatement(p *rule.Pass, n *ts.Node) (*ts.Node, bool) {
	if n == nil || n.Type() != "attribute" || kit.Qualified(p, n) != tf32Flag {
		return nil, false
	}
	asg := p.Parent(n)
	if asg == nil || asg.Type() != "assignment" || !p.Field(asg, "left").Equal(n) {
		return nil, false
	}
	if b, lit := kit.Bool(p.Field(asg, "right")); !lit || b || p.Field(asg, "type") != nil {
		return nil, false
	}
	stmt := kit.ExprStatement(asg)
	if stmt == nil {
		return nil, false
	}
	return stmt, true
}

func runMatmulPrecision(p *rule.Pass) {
	kit.WalkHits(p, []string{"allow_tf32", "set_float32_matmul_precision"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment", "string":
			return false
		case "attribute":
			if _, ok := TF32OffStatement(p, n); ok {
				asg := p.Parent(n)
				edit := rule.Edit{Start: kit.Start(asg), End: kit.End(asg), New: torchName(p) + `.set_float32_matmul_precision("highest")`}
				fix := kit.TorchFix("Use torch.set_float32_matmul_precision(\"highest\")", rule.Safe, edit)
				if torchName(p) != "torch" {
					fix.Imports = nil // the module's alias of torch is imported
				}
				kit.Report(p, kit.Finding(asg, "allow_tf32 = False asks cuBLAS for full float32 matmuls and does nothing "+
					"on TPU, where float32 matmuls run as one bfloat16 pass by default; "+
					"torch.set_float32_matmul_precision(\"highest\") asks for float32 on CUDA and TPU alike", fix))
				return false
			}
		case "call":
			if kit.CallName(p, n) != "torch.set_float32_matmul_precision" {
				return true
			}
			al, ok := kit.Arguments(p, n)
			if !ok || len(al.Positional) != 1 || len(al.All) != 1 {
				return true
			}
			if s, ok := kit.PlainString(p, al.Positional[0]); ok && s == "high" {
				p.Report(kit.Finding(n, "set_float32_matmul_precision(\"high\") is TF32 (a speed setting) on CUDA, "+
					"but three bfloat16 MXU passes on TorchTPU, three times the matmul work of its default; on TPU "+
					"\"medium\" is the fast setting: torch.set_float32_matmul_precision(\"medium\" if DEVICE.type == "+
					"\"tpu\" else \"high\") keeps both", nil))
			}
		}
		return true
	})
}

// torchName is how the module spells torch in new code.
func torchName(p *rule.Pass) string {
	if a := p.Imports.TorchAlias(); a != "" {
		return a
	}
	return "torch"
}
