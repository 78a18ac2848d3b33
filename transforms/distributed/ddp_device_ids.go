package distributed

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var ddpDeviceIDsExample = rule.Example{
	Before: `from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model, device_ids=[local_rank], output_device=local_rank)
`,
	Portable: `from torch.nn.parallel import DistributedDataParallel as DDP
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

model = DDP(model, device_ids=[local_rank] if DEVICE.type == "cuda" else None, output_device=local_rank if DEVICE.type == "cuda" else None)
`,
	TPU: `from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model)
`,
}

// DDPDeviceIDs rewrites DistributedDataParallel's CUDA device ids.
var DDPDeviceIDs = &rule.Rule{
	Code:   "PDS002",
	Name:   "ddp-device-ids",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `DistributedDataParallel`, `barrier` (see Run).
	Needles: []string{"DistributedDataParallel", "barrier"},
	Example: ddpDeviceIDsExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`DistributedDataParallel(..., device_ids=[...])` names CUDA devices",
		What: "For `torch.nn.parallel.DistributedDataParallel` (any import spelling) with `device_ids` / " +
			"`output_device` (keyword, or second and third positional argument), and for " +
			"`torch.distributed.barrier(device_ids=...)`: portable passes them only on CUDA " +
			"(`device_ids=[r] if DEVICE.type == \"cuda\" else None`); tpu removes them.",
		Why: "`device_ids` lists CUDA devices; for any other module DDP requires it to be None, and TorchTPU's DDP " +
			"example wraps the model with no device ids. `barrier`'s `device_ids` is NCCL-only.",
		Safety: "Safe: on CUDA the arguments are unchanged. Without device ids DDP does not move inputs to the " +
			"device: code that fed CPU tensors to a DDP model relying on that must move them itself (the device " +
			"rules rewrite the usual `.to(device)`/`.cuda()` calls).",
	}, ddpDeviceIDsExample),
	Run: runDDPDeviceIDs,
}

func runDDPDeviceIDs(p *rule.Pass) {
	if !kit.Mentions(p.Src, "DistributedDataParallel") && !kit.Mentions(p.Src, "barrier") {
		return
	}
	dv := kit.NewDev(p)
	kit.CallsWith(p, []string{"DistributedDataParallel", "barrier"}, func(call *ts.Node) {
		_, q := kit.Callee(p, call)
		barrier := q == "torch.distributed.barrier"
		if !barrier && q != "torch.nn.parallel.DistributedDataParallel" && q != "torch.nn.parallel.distributed.DistributedDataParallel" {
			return
		}
		al, ok := kit.Arguments(p, call)
		if !ok || al.Splat {
			return
		}
		var args []*ts.Node // argument nodes (for removal) and their values
		var values []*ts.Node
		for i, name := range []string{"device_ids", "output_device"} {
			if kw := al.Keywords[name]; kw != nil {
				args, values = append(args, kw), append(values, kw.ChildByFieldName("value"))
			} else if len(al.Positional) > i+1 && !barrier {
				args, values = append(args, al.Positional[i+1]), append(values, al.Positional[i+1])
			}
		}
		var edits []rule.Edit
		for i, v := range values {
			// Whitespace aside: the line printer may have spread a guard
			// this rule wrote over several lines.
			t := strings.Join(strings.Fields(p.Text(v)), " ")
			if t == "None" || strings.HasSuffix(t, `.type == "cuda" else None`) {
				continue
			}
			if p.Target == rule.TPU {
				edits = append(edits, al.Drop(p.Src, args[i]))
				continue
			}
			if v.Type() == "conditional_expression" || v.Type() == "lambda" || v.Type() == "named_expression" {
				edits = append(edits, rule.Edit{Start: kit.Start(v), End: kit.Start(v), New: "("},
					rule.Edit{Start: kit.End(v), End: kit.End(v), New: ")"})
			}
			edits = append(edits, rule.Edit{Start: kit.End(v), End: kit.End(v), New: " if " + dv.Type() + ` == "cuda" else None`})
		}
		if len(edits) == 0 {
			return
		}
		msg := "DDP device_ids name CUDA devices"
		if barrier {
			msg = "barrier(device_ids=...) names CUDA devices (NCCL only)"
		}
		f := rule.Finding{Start: kit.Start(call), End: kit.End(call), Message: msg}
		if p.Target == rule.TPU {
			f.Fix = &rule.Fix{Title: "Remove device_ids/output_device", Safety: rule.Safe, Edits: edits}
		} else {
			f.Fix = dv.Fix("Pass device ids only on CUDA", rule.Safe, edits...)
		}
		kit.Report(p, f)
	})
}
