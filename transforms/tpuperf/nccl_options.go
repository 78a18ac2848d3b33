package tpuperf

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var ncclOptionsExample = rule.Example{
	Before: `import torch.distributed as dist

opts = dist.ProcessGroupNCCL.Options()
opts.is_high_priority_stream = True
dist.init_process_group("nccl", pg_options=opts)
`,
}

// pgCalls take a process group's options as pg_options=.
var pgCalls = map[string]bool{
	"torch.distributed.init_process_group":                   true,
	"torch.distributed.new_group":                            true,
	"torch.distributed.distributed_c10d.init_process_group":  true,
	"torch.distributed.distributed_c10d.new_group":           true,
	"torch.distributed.new_subgroups":                        true,
	"torch.distributed.new_subgroups_by_enumeration":         true,
	"torch.distributed.device_mesh.init_device_mesh":         true,
	"torch.distributed.distributed_c10d._new_group_with_tag": true,
}

// NCCLOptions reports NCCL process-group options.
var NCCLOptions = &rule.Rule{
	Code:   "PTP005",
	Name:   "nccl-process-group-options",
	Family: Family,
	Safety: rule.DisplayOnly,
	// A finding is a name qualified as ...ProcessGroupNCCL..., whose text or
	// import holds ProcessGroupNCCL, or a pg_options= keyword argument.
	Needles: []string{"ProcessGroupNCCL", `\bpg_options\=`},
	Example: ncclOptionsExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "NCCL process-group options (`ProcessGroupNCCL.Options`, `pg_options=`)",
		What: "Reports uses of `torch.distributed.ProcessGroupNCCL` (its `Options`, its config, `isinstance` checks " +
			"against it) and a `pg_options=` argument other than `None` to `init_process_group`, `new_group`, " +
			"`new_subgroups` or `init_device_mesh`. `NCCL_*` environment variables are reported by cuda-env-var " +
			"(PDX008), and the `\"nccl\"` backend name by the distributed family (PDS).",
		Why: "On TorchTPU the process-group backend is `\"tpu_dist\"` (registered for the `tpu` device); NCCL is " +
			"not used, so NCCL options (high-priority streams, communicator splitting, timeouts and buffer sizes " +
			"tuned for NVLink/InfiniBand) do not apply. `ProcessGroupNCCL.Options` passed to another backend is " +
			"rejected or ignored, and an `isinstance(pg, ProcessGroupNCCL)` check is always false on TPU, so " +
			"the branch it guards never runs. Pass `pg_options` only when the backend is NCCL " +
			"(`pg_options=opts if DEVICE.type == \"cuda\" else None`), and keep the NCCL-only code for CUDA runs.",
		Safety: "Diagnostic only: the options express tuning for one cluster, and what replaces them on TPU (if " +
			"anything) is a choice for a person.",
	}, ncclOptionsExample),
	Run: runNCCLOptions,
}

func runNCCLOptions(p *rule.Pass) {
	kit.WalkHits(p, []string{"ProcessGroupNCCL"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment", "string", "import_statement", "import_from_statement":
			return false
		case "attribute":
			reportNCCLName(p, n)
		case "identifier":
			if par := p.Parent(n); par == nil || par.Type() != "attribute" {
				reportNCCLName(p, n) // a name in a chain is the chain's
			}
		}
		return true
	})
	kit.Calls(p, func(call *ts.Node) {
		_, q, al, _, ok := kit.Through(p, call)
		if !ok || !pgCalls[q] {
			return
		}
		v := al.KwValue("pg_options")
		if v == nil || kit.IsNone(v) {
			return
		}
		if strings.Contains(p.Text(v), "ProcessGroupNCCL") {
			return // reported as a name
		}
		p.Report(kit.Finding(al.Keywords["pg_options"], "pg_options= carries backend options (NCCL's on a CUDA "+
			"cluster); TorchTPU's backend is tpu_dist, which does not take them: pass them only when the backend is "+
			"NCCL (pg_options=... if DEVICE.type == \"cuda\" else None)", nil))
	})
}

// reportNCCLName reports n when it is the longest dotted chain naming
// torch.distributed's ProcessGroupNCCL (or something under it).
func reportNCCLName(p *rule.Pass, n *ts.Node) {
	if par := p.Parent(n); par != nil && par.Type() == "attribute" && p.Field(par, "object").Equal(n) {
		return // report the longest chain only
	}
	q := kit.Qualified(p, n)
	if !strings.HasPrefix(q, "torch.") || !strings.Contains(q, ".ProcessGroupNCCL") {
		return
	}
	if !strings.HasSuffix(q, ".ProcessGroupNCCL") && !strings.Contains(q, ".ProcessGroupNCCL.") {
		return
	}
	p.Report(kit.Finding(n, "`"+p.Text(n)+"` is NCCL's process group: on TorchTPU the backend is tpu_dist and NCCL is "+
		"not used, so NCCL options do not apply and an isinstance check against it is false; keep this for CUDA "+
		"runs (if DEVICE.type == \"cuda\") and use the default options on TPU", nil))
}
