package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/device/devkit"
	"github.com/pallasify/pallasify/transforms/rule"
)

var deviceInfoExample = rule.Example{
	Before: `import torch

name = torch.cuda.get_device_name(0)
total = torch.cuda.get_device_properties(local_rank).total_memory
`,
	Portable: `import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

name = torch.get_device_module(DEVICE).get_device_name(0)
total = torch.get_device_module(DEVICE).get_device_properties(local_rank).total_memory
`,
	TPU: `import torch

name = torch.tpu.get_device_name()
total = torch.tpu.get_device_properties().total_memory
`,
}

// DeviceInfo rewrites torch.cuda.get_device_name/get_device_properties.
var DeviceInfo = &rule.Rule{
	Code:    "PCU007",
	Name:    "cuda-device-info",
	Family:  Family,
	Safety:  rule.Safe,
	Example: deviceInfoExample,
	Doc: devkit.Doc(devkit.DocSpec{
		Title: "`torch.cuda.get_device_name/get_device_properties` describe CUDA devices only",
		What: "Portable: `torch.get_device_module(DEVICE).get_device_name(...)` (and `get_device_properties`), " +
			"arguments kept. TPU: `torch.tpu.get_device_name()` / `torch.tpu.get_device_properties()`: an index " +
			"argument is dropped (one chip per process).",
		Why: "TorchTPU implements both (`get_device_properties()` has `name`, `total_memory` = HBM bytes, " +
			"`multi_processor_count` = 1; torchtpu.md §3); `torch.get_device_module` returns the module of " +
			"whichever backend `DEVICE` is.",
		Safety: "Safe for 0, per-process indices and device values. Dropping any other index on the tpu target is " +
			"unsafe (it asked about another device). On a CPU-only machine the portable call raises, as the " +
			"original did.",
	}, deviceInfoExample),
	Run: func(p *rule.Pass) {
		dv := devkit.NewDev(p)
		cudaCalls(p, []string{"get_device_name", "get_device_properties"}, func(c apiCall) {
			f := c.finding(p, "describes a CUDA device only")
			if p.Target != rule.TPU {
				f.Fix = dv.Fix("Ask DEVICE's backend", rule.Safe, c.callee("torch.get_device_module("+dv.Name()+")."+c.name))
				devkit.Report(p, f)
				return
			}
			edits := []rule.Edit{c.callee("torch.tpu." + c.name)}
			safety := rule.Safe
			switch {
			case len(c.args.All) == 0:
			case len(c.args.All) == 1:
				arg := c.args.All[0]
				if arg.Type() == "keyword_argument" {
					arg = arg.ChildByFieldName("value")
				}
				if t := p.Text(arg); devkit.IndexLike(t) && !devkit.PerProcessIndex(t) {
					safety = rule.Unsafe
				}
				edits = append(edits, rule.Edit{Start: devkit.Start(c.args.Node) + 1, End: devkit.End(c.args.Node) - 1})
			default:
				return
			}
			f.Fix = devkit.TorchFix("Call torch.tpu."+c.name, safety, edits...)
			devkit.Report(p, f)
		})
	},
}
