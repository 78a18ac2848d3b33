package device

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaMethodExample = rule.Example{
	Before: `def train(batch, t, args):
    model = Net().cuda()
    x = batch.cuda(non_blocking=True)
    y = t.cuda(args.gpu)
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


def train(batch, t, args):
    model = Net().to(DEVICE)
    x = batch.to(DEVICE, non_blocking=True)
    y = t.to(device_at(args.gpu))
`,
	TPU: `def train(batch, t, args):
    model = Net().to("tpu")
    x = batch.to("tpu", non_blocking=True)
    y = t.to("tpu")
`,
}

// CudaMethod rewrites x.cuda(...) to x.to(<device>).
var CudaMethod = &rule.Rule{
	Code:   "PDV002",
	Name:   "cuda-method",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run). `\q`
	// (rule.StringStart) is sound: every finding is a call of an attribute
	// named cuda, a whole name in code (so `\b` holds at both ends).
	Needles: []string{`\q\bcuda\b`},
	Example: cudaMethodExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`x.cuda()` moves a tensor or module to CUDA",
		What: "Rewrites the method call `.cuda()`, `.cuda(i)`, `.cuda(device=i)` and `.cuda(non_blocking=True)` on " +
			"tensors and modules to `.to(...)`, keeping `non_blocking=` and `memory_format=`.\n\n" +
			"Portable: `.to(DEVICE)`; an index argument (an int, a name about a rank or a GPU, an element of an id " +
			"list such as `device_ids[0]`, a name ending in `_id`) becomes `.to(device_at(i))` (the CUDA device `i` on CUDA, " +
			"`DEVICE` elsewhere; see cuda-device-string, PDV001), a device " +
			"argument (a name containing `device`) becomes `.to(device)`. TPU: `.to(\"tpu\")`, dropping the index " +
			"(one chip per process). " + kit.ImportTimeDoc + "\n\n" +
			"`.cuda` attributes that are not method calls (`args.cuda`, `torch.cuda`, `numba.cuda.jit`) and " +
			"calls on imported modules are left alone.",
		Why: "`.cuda()` only exists for CUDA; TorchTPU has no confirmed `.tpu()` method, and " +
			"`.to(device)` works on every backend for both tensors and modules (both return the moved object).",
		Safety: "Safe. Portable, per host: on CUDA the same device (`.to(i)` with an int `i` would also mean " +
			"CUDA device `i`, so an index is never passed to `.to()` bare); on a CPU-only or MPS host the CPU, where " +
			"the original failed. Except on the tpu target when the index is neither 0 nor a per-process index (a name " +
			"about a rank or a GPU slot): dropping it puts work meant for several GPUs of one process on one chip, " +
			"so that fix is unsafe.",
	}, cudaMethodExample),
	Run: runCudaMethod,
}

func runCudaMethod(p *rule.Pass) {
	if !kit.Mentions(p.Src, "cuda") {
		return
	}
	dv := kit.NewDev(p)
	kit.CallsWith(p, []string{"cuda"}, func(call *ts.Node) {
		fn := call.ChildByFieldName("function")
		if fn.Type() != "attribute" || p.Text(fn.ChildByFieldName("attribute")) != "cuda" {
			return
		}
		obj := fn.ChildByFieldName("object")
		if d := kit.Dotted(p, obj); d != "" {
			head, _, _ := strings.Cut(d, ".")
			if _, isMod := p.Imports.Modules[head]; isMod || head == "torch" {
				return // torch.cuda(...), numba.cuda(...): a module, not a tensor
			}
		}
		al, ok := kit.Arguments(p, call)
		if !ok || al.Splat {
			return
		}
		for name := range al.Keywords {
			if name != "device" && name != "non_blocking" && name != "memory_format" {
				return
			}
		}
		var idx *ts.Node // the device/index argument, positional or device=
		switch {
		case len(al.Positional) == 1 && al.Keywords["device"] == nil:
			idx = al.Positional[0]
		case len(al.Positional) == 0:
			idx = al.KwValue("device")
		default:
			return
		}
		attr := fn.ChildByFieldName("attribute")
		rename := rule.Edit{Start: kit.Start(attr), End: kit.End(attr), New: "to"}
		f := finding(call, idx)
		safety := rule.Safe
		if p.Target == rule.TPU && idx != nil && kit.IndexLike(p.Text(idx)) && !kit.PerProcessIndex(p.Text(idx)) {
			safety = rule.Unsafe
			f.Message += indexNote(p.Text(idx))
		}
		if p.Target == rule.TPU && (idx == nil || kit.IndexLike(p.Text(idx))) && kit.ImportTime(p, call) {
			// A move to the TPU on import: the portable form (see kit.ImportTime).
			f.Message += kit.ImportTimeNote
		} else if p.Target == rule.TPU {
			edits := []rule.Edit{rename}
			switch {
			case idx == nil:
				edits = append(edits, al.InsertFirst(`"tpu"`))
			case !kit.IndexLike(p.Text(idx)):
				// .cuda(device): the device value is rewritten where it is set.
			default:
				edits = append(edits, rule.Edit{Start: kit.Start(idx), End: kit.End(idx), New: `"tpu"`})
			}
			f.Fix = &rule.Fix{Title: `Use .to("tpu")`, Safety: safety, Edits: edits}
			kit.Report(p, f)
			return
		}
		edits := []rule.Edit{rename}
		switch {
		case idx == nil:
			edits = append(edits, al.InsertFirst(dv.Name()))
		case kit.IndexLike(p.Text(idx)):
			edits = append(edits,
				rule.Edit{Start: kit.Start(idx), End: kit.Start(idx), New: dv.AtName() + "("},
				rule.Edit{Start: kit.End(idx), End: kit.End(idx), New: ")"})
			f.Fix = dv.AtFix("Use .to("+dv.At(p.Text(idx))+")", safety, edits...)
			kit.Report(p, f)
			return
		}
		f.Fix = dv.Fix("Use .to("+dv.Name()+")", safety, edits...)
		kit.Report(p, f)
	})
}

func finding(call, idx *ts.Node) rule.Finding {
	msg := "`.cuda()` moves to CUDA only"
	if idx != nil {
		msg = "`.cuda(...)` moves to a CUDA device only"
	}
	return rule.Finding{Start: kit.Start(call), End: kit.End(call), Message: msg}
}
