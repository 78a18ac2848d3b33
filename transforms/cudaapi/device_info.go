package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var deviceInfoExample = rule.Example{
	Before: `import torch


def describe(local_rank):
    name = torch.cuda.get_device_name(0)
    total = torch.cuda.get_device_properties(local_rank).total_memory
    return name, total
`,
	Portable: `import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)


def device_at(index):
    """pallasify: the CUDA device with this index; elsewhere DEVICE.

    A TPU process sees its one chip as tpu:0.
    """
    if DEVICE.type == "cuda":
        return torch.device(DEVICE.type, index)
    return DEVICE


def describe(local_rank):
    name = torch.get_device_module(DEVICE).get_device_name(0) if DEVICE.type != "cpu" else "cpu"
    total = torch.get_device_module(DEVICE).get_device_properties(device_at(local_rank)).total_memory
    return name, total
`,
	TPU: `import torch


def describe(local_rank):
    name = torch.tpu.get_device_name()
    total = torch.tpu.get_device_properties().total_memory
    return name, total
`,
}

// importNote ends the message of a tpu-target query written in the portable
// form because it runs on import.
const importNote = "; it runs when the module is imported, so it asks the device found on this host (the TPU " +
	"where there is one): torch.tpu exists only where TorchTPU has a chip, so the import would fail everywhere else"

// DeviceInfo rewrites torch.cuda.get_device_name/get_device_properties.
var DeviceInfo = &rule.Rule{
	Code:   "PCU007",
	Name:   "cuda-device-info",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: deviceInfoExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.get_device_name/get_device_properties` describe CUDA devices only",
		What: "Portable: `torch.get_device_module(DEVICE).get_device_name(...)` (and `get_device_properties`). " +
			"`get_device_name` is guarded: `... if DEVICE.type != \"cpu\" else \"cpu\"`, since the CPU has no device " +
			"module with names. An index argument other than 0 becomes `device_at(i)` (the CUDA device `i` on CUDA, " +
			"`DEVICE` elsewhere; see cuda-device-string, PDV001). TPU: `torch.tpu.get_device_name()` / `torch.tpu.get_device_properties()`: an index " +
			"argument is dropped (one chip per process). On the tpu target a call that runs when the module is imported " +
			"(module level, class bodies, default values, decorators; see kit.ImportTime) gets the portable form: " +
			"`torch.tpu` exists only where TorchTPU has a chip, so importing the module would fail on every other host. " +
			"`get_device_properties` there still raises on a host without an accelerator, as the CUDA call did " +
			"without CUDA: move it to first use.",
		Why: "TorchTPU implements both (`get_device_properties()` has `name`, `total_memory` = HBM bytes, " +
			"`multi_processor_count` = 1); `torch.get_device_module` returns the module of " +
			"whichever backend `DEVICE` is.",
		Safety: "Safe for 0, per-process indices and device values. Dropping any other index on the tpu target is " +
			"unsafe (it asked about another device). On a CPU-only machine the portable name is \"cpu\"; " +
			"`get_device_properties` raises there, as the original did (there is no value to stand in for it).",
	}, deviceInfoExample),
	Run: func(p *rule.Pass) {
		dv := kit.NewDev(p)
		cudaCalls(p, []string{"get_device_name", "get_device_properties"}, func(c apiCall) {
			f := c.finding(p, "describes a CUDA device only")
			if p.Target != rule.TPU {
				f.Fix = portableInfoFix(p, dv, c, rule.Safe)
				kit.Report(p, f)
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
				if t := p.Text(arg); kit.IndexLike(t) && !kit.PerProcessIndex(t) {
					safety = rule.Unsafe
				}
				edits = append(edits, rule.Edit{Start: kit.Start(c.args.Node) + 1, End: kit.End(c.args.Node) - 1})
			default:
				return
			}
			if kit.ImportTime(p, c.call) {
				// On import the tpu target writes the portable form, with
				// the tpu fix's safety: torch.tpu exists only where TorchTPU
				// has a chip (see kit.ImportTime).
				f.Message += importNote
				f.Fix = portableInfoFix(p, dv, c, safety)
			} else {
				f.Fix = kit.TorchFix("Call torch.tpu."+c.name, safety, edits...)
			}
			kit.Report(p, f)
		})
	},
}

// portableInfoFix is the portable rewrite of a device-info call: ask
// DEVICE's backend, an index through device_at, "cpu" for a name on the CPU.
func portableInfoFix(p *rule.Pass, dv *kit.Dev, c apiCall, safety rule.Safety) *rule.Fix {
	edits := []rule.Edit{c.callee("torch.get_device_module(" + dv.Name() + ")." + c.name)}
	at := false
	if len(c.args.All) == 1 && len(c.args.Positional) == 1 {
		if t := p.Text(c.args.Positional[0]); c.args.Positional[0].Type() != "string" && kit.IndexLike(t) && t != "0" {
			arg := c.args.Positional[0]
			edits = append(edits,
				rule.Edit{Start: kit.Start(arg), End: kit.Start(arg), New: dv.AtName() + "("},
				rule.Edit{Start: kit.End(arg), End: kit.End(arg), New: ")"})
			at = true
		}
	}
	if c.name == "get_device_name" {
		// The CPU has no device module with a name: say "cpu".
		guard := " if " + dv.Type() + ` != "cpu" else "cpu"`
		if kit.Paren(c.call, "x", true) != "x" {
			edits = append(edits, rule.Edit{Start: kit.Start(c.call), End: kit.Start(c.call), New: "("})
			guard += ")"
		}
		edits = append(edits, rule.Edit{Start: kit.End(c.call), End: kit.End(c.call), New: guard})
	}
	if at {
		return dv.AtFix("Ask DEVICE's backend", safety, edits...)
	}
	return dv.Fix("Ask DEVICE's backend", safety, edits...)
}
