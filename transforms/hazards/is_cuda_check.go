package hazards

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var isCudaExample = rule.Example{
	Before: `def to_numpy(x):
    if x.is_cuda:
        x = x.cpu()
    return x.numpy()
`,
}

// IsCudaCheck reports x.is_cuda, which is False for TPU tensors.
var IsCudaCheck = &rule.Rule{
	Code:   "PDX001",
	Name:   "is-cuda-check",
	Family: Family,
	Safety: rule.DisplayOnly,
	// A finding is an attribute named is_cuda: a whole name in code (the
	// index holds no string or comment), so `\q` and `\b` hold.
	Needles: []string{`\q\bis_cuda\b`},
	Example: isCudaExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Code keyed on `x.is_cuda`",
		What:  "Reports every read of the `is_cuda` attribute of a tensor or module parameter.",
		Why: "A tensor on a TPU has `is_cuda == False`, so a branch written as \"on the accelerator\" silently takes the CPU path " +
			"(an extra host copy, or skipped device work). The intent is usually \"not on the CPU\": write " +
			"`x.device.type != \"cpu\"`, or compare with the module's device (`x.device.type == DEVICE.type`).",
		Safety: "Diagnostic only: what the branch means (\"on CUDA\" or \"on an accelerator\") decides the rewrite, so a human picks it.",
	}, isCudaExample),
	Run: runIsCudaCheck,
}

func runIsCudaCheck(p *rule.Pass) {
	kit.Nodes(p, "attribute", func(n *ts.Node) {
		if p.Text(n.ChildByFieldName("attribute")) != "is_cuda" {
			return
		}
		if par := n.Parent(); par != nil && par.Type() == "assignment" && par.ChildByFieldName("left") != nil && par.ChildByFieldName("left").Equal(n) {
			return // assigning an attribute of one's own object
		}
		advice := "test `.device.type != \"cpu\"` (or compare with DEVICE.type) instead"
		if p.Target == rule.TPU {
			advice = "test `.device.type == \"tpu\"` (or `!= \"cpu\"`) instead"
		}
		p.Report(kit.Finding(n, "`"+p.Text(n)+"` is False for TPU tensors, so this takes the non-CUDA path on TPU; "+advice, nil))
	})
}
