package distributed

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var ncclCheckExample = rule.Example{
	Before: `import torch.distributed as dist


def barrier(device):
    if dist.get_backend() == "nccl":
        dist.barrier(device_ids=[device.index])
    else:
        dist.barrier()
`,
}

// NcclBackendCheck reports code that compares the process-group backend
// with "nccl".
var NcclBackendCheck = &rule.Rule{
	Code:   "PDS004",
	Name:   "nccl-backend-check",
	Family: Family,
	Safety: rule.DisplayOnly,
	// A check compares with the literal "nccl" or with dist.Backend.NCCL.
	Needles: []string{"nccl", "NCCL"},
	Example: ncclCheckExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "The process-group backend is compared with \"nccl\"",
		What: "Reports a comparison (`==`, `!=`, `in`, `not in`) of the process-group backend with `\"nccl\"` " +
			"(or `dist.Backend.NCCL`, or a tuple, list or set holding it): the backend being " +
			"`torch.distributed.get_backend(...)`, a name the module assigns from it, or a name or attribute " +
			"called `*backend*` (`self.backend`, `args.dist_backend`). It is left as it is, on both targets.",
		Why: "With TorchTPU the backend is `\"tpu_dist\"`, so such a check is false on a TPU " +
			"host, which takes the code's non-NCCL path, as every backend other than NCCL did before the " +
			"migration. That is right for what only NCCL takes (`barrier(device_ids=[...])`, CUDA streams, " +
			"NCCL environment settings) and wrong where the NCCL path is simply the accelerator path (moving " +
			"tensors to the device before a collective, bucket sizes for GPUs): which one it is cannot be told " +
			"from the code.",
		Safety: "Diagnostic only: where the NCCL path is what a TPU needs too, compare with " +
			"`(\"nccl\", \"tpu_dist\")`; otherwise nothing is to be done.",
	}, ncclCheckExample),
	Run: runNcclBackendCheck,
}

func runNcclBackendCheck(p *rule.Pass) {
	if !kit.Mentions(p.Src, "nccl", "NCCL") {
		return
	}
	fromGetBackend := map[string]bool{} // names the module assigns get_backend(...)
	kit.Nodes(p, "assignment", func(a *ts.Node) {
		left, right := a.ChildByFieldName("left"), a.ChildByFieldName("right")
		if left != nil && right != nil && right.Type() == "call" && getBackend(p, right) {
			fromGetBackend[p.Text(left)] = true
		}
	})
	backend := func(n *ts.Node) bool {
		switch n.Type() {
		case "call":
			return getBackend(p, n)
		case "identifier":
			return fromGetBackend[p.Text(n)] || backendName(p.Text(n))
		case "attribute":
			return fromGetBackend[p.Text(n)] || backendName(p.Text(n.ChildByFieldName("attribute")))
		}
		return false
	}
	kit.Nodes(p, "comparison_operator", func(c *ts.Node) {
		ops := ts.Children(c)
		if len(ops) != 2 {
			return
		}
		for i, other := range ops {
			lit := ncclIn(p, ops[1-i])
			if lit == nil || !backend(other) {
				continue
			}
			kit.Report(p, kit.Finding(lit, "the process-group backend is compared with "+p.Text(lit)+
				": with TorchTPU it is \"tpu_dist\", so a TPU host takes the non-NCCL path here, as every other "+
				"backend did before the migration; left as it is: where the NCCL path is what a TPU needs too, "+
				"compare with (\"nccl\", \"tpu_dist\")", nil))
			return
		}
	})
}

// getBackend reports whether call is torch.distributed.get_backend(...).
func getBackend(p *rule.Pass, call *ts.Node) bool {
	return kit.CallName(p, call) == "torch.distributed.get_backend"
}

// ncclIn returns the node naming NCCL in a comparison operand: the literal
// "nccl", dist.Backend.NCCL, or such an element of a tuple, list or set.
func ncclIn(p *rule.Pass, n *ts.Node) *ts.Node {
	switch n.Type() {
	case "string":
		if s, ok := kit.PlainString(p, n); ok && s == "nccl" {
			return n
		}
	case "attribute":
		if kit.Qualified(p, n) == "torch.distributed.Backend.NCCL" {
			return n
		}
	case "tuple", "list", "set", "parenthesized_expression":
		for _, e := range ts.Children(n) {
			if lit := ncclIn(p, e); lit != nil {
				return lit
			}
		}
	}
	return nil
}
