package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var deviceContextExample = rule.Example{
	Before: `import torch

with torch.cuda.device(local_rank):
    buf = torch.empty(1 << 20, device="cuda")
`,
	Portable: `import torch
import contextlib

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

with torch.cuda.device(local_rank) if DEVICE.type == "cuda" else contextlib.nullcontext():
    buf = torch.empty(1 << 20, device="cuda")
`,
	TPU: `import torch
import contextlib

with contextlib.nullcontext():
    buf = torch.empty(1 << 20, device="cuda")
`,
}

// DeviceContext rewrites the torch.cuda.device(i) context manager.
var DeviceContext = &rule.Rule{
	Code:   "PCU011",
	Name:   "cuda-device-context",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: deviceContextExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`with torch.cuda.device(i):` selects a CUDA device for a block",
		What: "Portable: `torch.cuda.device(i) if DEVICE.type == \"cuda\" else contextlib.nullcontext()`: the same " +
			"device switch on CUDA, where one process may drive several GPUs, and nothing elsewhere (the same test " +
			"as the device-index helper `device_at`, see cuda-device-string, PDV001). TPU: " +
			"`contextlib.nullcontext()`. `import contextlib` is added when missing. Device strings inside the block " +
			"are the device rules' business.",
		Why: "TorchTPU gives each process one chip, seen as `tpu:0`; `torch.tpu.set_device(i)` raises for any other " +
			"index (\"changing the active TPU device within a process is not supported\"), and TorchTPU 0.2.0's `torch.tpu.device` context manager is internal (user code " +
			"creating one raises RuntimeError; it points to `torch.accelerator.device_index`). `torch.accelerator.device_index` " +
			"needs PyTorch 2.8 and would raise on TPU for a rank's index.",
		Safety: "Safe for 0, per-process indices (a name about a rank or a GPU slot) and device values: the process " +
			"has one device, which the block already uses. Any other index on the tpu target is unsafe: work meant " +
			"for another device of the process stays on the one chip.",
	}, deviceContextExample),
	Run: runDeviceContext,
}

func runDeviceContext(p *rule.Pass) {
	cudaCalls(p, []string{"device"}, func(c apiCall) {
		if len(c.args.All) != 1 || c.args.Splat {
			return
		}
		// Our own portable output, exactly: `torch.cuda.device(i) if
		// DEVICE.type == "cuda" else contextlib.nullcontext()` (a user's
		// `... if a.type == "cuda" else my_nullcontext()` is not: the
		// device-type rule rewrites its check, and this call with it, in
		// the same pass: FuzzEngine 2900d04936cabd7e).
		// (the tpu target writes nullcontext(), and compares device types
		// with "tpu", so there the form is the user's and is rewritten).
		if par := c.call.Parent(); p.Target == rule.Portable && par != nil && par.Type() == "conditional_expression" && par.NamedChildCount() == 3 &&
			par.NamedChild(0).Equal(c.call) && p.Text(par.NamedChild(1)) == kit.NewDev(p).Type()+` == "cuda"` &&
			(p.Text(par.NamedChild(2)) == "contextlib.nullcontext()" || p.Text(par.NamedChild(2)) == "nullcontext()") {
			return
		}
		f := c.finding(p, "switches the CUDA device for a block; TorchTPU has one chip per process and no device context")
		arg := c.args.All[0]
		if arg.Type() == "keyword_argument" {
			arg = arg.ChildByFieldName("value")
		}
		null := "contextlib.nullcontext()"
		if p.Target == rule.TPU {
			safety := rule.Safe
			if t := p.Text(arg); kit.IndexLike(t) && !kit.PerProcessIndex(t) {
				safety = rule.Unsafe
			}
			f.Fix = &rule.Fix{Title: "Use contextlib.nullcontext()", Safety: safety, Edits: []rule.Edit{c.whole(null)},
				Imports: []string{"import contextlib"}}
			kit.Report(p, f)
			return
		}
		dv := kit.NewDev(p)
		tail := " if " + dv.Type() + ` == "cuda" else ` + null
		edits := []rule.Edit{}
		if par := c.call.Parent(); par == nil || (par.Type() != "with_item" && kit.Paren(c.call, "x", true) != "x") {
			edits = append(edits, rule.Edit{Start: kit.Start(c.call), End: kit.Start(c.call), New: "("})
			tail += ")"
		}
		edits = append(edits, rule.Edit{Start: kit.End(c.call), End: kit.End(c.call), New: tail})
		f.Fix = dv.Fix("Switch devices on CUDA only", rule.Safe, edits...)
		f.Fix.Imports = append(f.Fix.Imports, "import contextlib")
		kit.Report(p, f)
	})
}
