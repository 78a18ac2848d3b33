package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/device/devkit"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

var setDeviceExample = rule.Example{
	Before: `import os

import torch

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
`,
	Portable: `import os

import torch

local_rank = int(os.environ["LOCAL_RANK"])
if torch.accelerator.is_available():
    torch.accelerator.set_device_index(local_rank)
`,
	TPU: `import os

import torch

local_rank = int(os.environ["LOCAL_RANK"])
`,
}

// SetDevice rewrites torch.cuda.set_device(i).
var SetDevice = &rule.Rule{
	Code:    "PCU004",
	Name:    "cuda-set-device",
	Family:  Family,
	Safety:  rule.Safe,
	Example: setDeviceExample,
	Doc: devkit.Doc(devkit.DocSpec{
		Title: "`torch.cuda.set_device(i)` selects a CUDA device",
		What: "Portable: `torch.accelerator.set_device_index(i)`, put under `if torch.accelerator.is_available():` " +
			"when the call is a statement of its own.\n\n" +
			"TPU: the statement is removed when `i` is 0, a per-process index (a name about a rank or a GPU slot, " +
			"such as `local_rank` or `args.gpu`) or a device value; `pass` replaces it when it was the only statement " +
			"of its block. Any other index is reported and left for a human: it is a hazard (torchtpu.md §13.2).",
		Why: "TorchTPU gives each process one chip, seen as `tpu:0`; `torch.tpu.set_device(i)` only validates and " +
			"raises for any index but the current one (torchtpu.md §1), so the rank-indexed call of a torchrun " +
			"script would fail on every rank but the first.",
		Safety: "Safe: on CUDA the same device is selected; on TPU the removed call selected the process's only chip. " +
			"A literal non-zero index, or an index that is not per-process, gets no fix.",
	}, setDeviceExample),
	Run: runSetDevice,
}

func runSetDevice(p *rule.Pass) {
	cudaCalls(p, []string{"set_device"}, func(c apiCall) {
		var arg *ts.Node
		switch {
		case len(c.args.All) == 1 && len(c.args.Positional) == 1:
			arg = c.args.Positional[0]
		case len(c.args.All) == 1 && c.args.KwValue("device") != nil:
			arg = c.args.KwValue("device")
		default:
			return
		}
		idx := p.Text(arg)
		stmt := devkit.Statement(c.call)
		if p.Target == rule.TPU {
			f := c.finding(p, "selects a device by index; TorchTPU has one chip per process (tpu:0)")
			if devkit.PerProcessIndex(idx) || !devkit.IndexLike(idx) {
				if stmt != nil {
					if e, ok := devkit.RemoveStatement(p.Src, stmt); ok {
						f.Fix = &rule.Fix{Title: "Remove the call (each process owns one chip)", Safety: rule.Safe, Edits: []rule.Edit{e}}
					}
				}
			} else {
				f.Message = "`set_device(" + idx + ")` picks device " + idx + " inside one process; TorchTPU has one chip per " +
					"process (tpu:0), so work meant for another device cannot move there: restructure as one process per chip"
			}
			devkit.Report(p, f)
			return
		}
		f := c.finding(p, "selects a CUDA device only")
		edits := []rule.Edit{c.callee("torch.accelerator.set_device_index")}
		if stmt != nil {
			if guard, ok := devkit.GuardStatement(p.Src, stmt, "torch.accelerator.is_available()"); ok {
				edits = append(guard, edits...)
			}
		}
		f.Fix = devkit.TorchFix("Call torch.accelerator.set_device_index", rule.Safe, edits...)
		devkit.Report(p, f)
	})
}
