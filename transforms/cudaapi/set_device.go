package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
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

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

local_rank = int(os.environ["LOCAL_RANK"])
if DEVICE.type == "cuda":
    torch.accelerator.set_device_index(local_rank)
`,
	TPU: `import os

import torch

local_rank = int(os.environ["LOCAL_RANK"])
`,
}

// SetDevice rewrites torch.cuda.set_device(i).
var SetDevice = &rule.Rule{
	Code:   "PCU004",
	Name:   "cuda-set-device",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: setDeviceExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.set_device(i)` selects a CUDA device",
		What: "Portable: `torch.accelerator.set_device_index(i)` (a `device=` keyword becomes positional: the " +
			"parameter is positional-only), put under `if DEVICE.type == \"cuda\":` " +
			"when the call is a statement of its own (elsewhere: `... if DEVICE.type == \"cuda\" else None`). Only " +
			"CUDA has several devices per process to choose from; on TorchTPU the index of a rank other than 0 " +
			"raises (each process sees its one chip as index 0), and the CPU has nothing to select. This is the " +
			"same test as the device-index helper `device_at` of cuda-device-string (PDV001).\n\n" +
			"TPU: the statement is removed when `i` is 0, a per-process index (a name about a rank or a GPU slot, " +
			"such as `local_rank` or `args.gpu`) or a device value; `pass` replaces it when it was the only statement " +
			"of its block. Any other index is reported and left for a human: the process has no chip at that index.",
		Why: "TorchTPU gives each process one chip, seen as `tpu:0`; `torch.tpu.set_device(i)` is internal to TorchTPU " +
			"0.2.0 (user code calling it raises RuntimeError; `torch.accelerator.set_device_index` is its public " +
			"face), and the index of any rank but the first is refused (\"changing the active TPU device within a process is not supported\"), so the rank-indexed call of a torchrun " +
			"script would fail on every rank but the first.",
		Safety: "Safe: on CUDA the same device is selected; elsewhere (and on TPU, where the call is removed) the " +
			"process's only device is used. " +
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
		stmt := kit.ExprStatement(c.call)
		if p.Target == rule.TPU {
			f := c.finding(p, "selects a device by index; TorchTPU has one chip per process (tpu:0)")
			if kit.PerProcessIndex(idx) || !kit.IndexLike(idx) {
				if stmt != nil {
					if e, ok := kit.RemoveStatement(p.Src, stmt); ok {
						f.Fix = &rule.Fix{Title: "Remove the call (each process owns one chip)", Safety: rule.Safe, Edits: []rule.Edit{e}}
					}
				}
			} else {
				f.Message = "`set_device(" + idx + ")` picks device " + idx + " inside one process; TorchTPU has one chip per " +
					"process (tpu:0), so work meant for another device cannot move there: restructure as one process per chip"
			}
			kit.Report(p, f)
			return
		}
		f := c.finding(p, "selects a CUDA device only")
		dv := kit.NewDev(p)
		cond := dv.Type() + ` == "cuda"`
		edits := append([]rule.Edit{c.callee("torch.accelerator.set_device_index")}, c.positional("device")...)
		guarded := false
		if stmt != nil {
			var guard []rule.Edit
			if guard, guarded = kit.GuardStatement(p.Src, stmt, cond); guarded {
				edits = append(guard, edits...)
			} else {
				guarded = kit.Guarded(p.Src, stmt, cond)
			}
		}
		if !guarded {
			// An expression: set_device returns None, so does the guarded form.
			text := " if " + cond + " else None"
			edits = append(edits, rule.Edit{Start: kit.End(c.call), End: kit.End(c.call), New: text})
			if kit.Paren(c.call, "x", true) != "x" {
				edits[len(edits)-1].New += ")"
				edits = append(edits, rule.Edit{Start: kit.Start(c.call), End: kit.Start(c.call), New: "("})
			}
		}
		f.Fix = dv.Fix("Call torch.accelerator.set_device_index on CUDA only", rule.Safe, edits...)
		kit.Report(p, f)
	})
}
