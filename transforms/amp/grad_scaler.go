package amp

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var gradScalerExample = rule.Example{
	Before: `import torch

scaler = torch.cuda.amp.GradScaler()
scaler2 = torch.amp.GradScaler("cuda", enabled=args.amp)
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

scaler = torch.amp.GradScaler(DEVICE.type, enabled=DEVICE.type == "cuda")
scaler2 = torch.amp.GradScaler(DEVICE.type, enabled=args.amp and DEVICE.type == "cuda")
`,
	TPU: `import torch

scaler = torch.amp.GradScaler("tpu", enabled=False)
scaler2 = torch.amp.GradScaler("tpu", enabled=False)
`,
}

// GradScaler rewrites CUDA gradient scalers.
var GradScaler = &rule.Rule{
	Code:   "PAM003",
	Name:   "cuda-grad-scaler",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `GradScaler` (see Run).
	Needles: []string{"GradScaler"},
	Example: gradScalerExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "CUDA gradient scaler",
		What: "Rewrites `torch.cuda.amp.GradScaler(...)` to `torch.amp.GradScaler(<device type>, ...)`, and the " +
			"device of `torch.amp.GradScaler(\"cuda\", ...)` / `torch.amp.GradScaler()` (whose default device is " +
			"`\"cuda\"`). Portable: `DEVICE.type`, enabled only when `DEVICE.type == \"cuda\"` (combined with an " +
			"existing `enabled=`). TPU: `\"tpu\"` with `enabled=False`.\n\n" +
			"Names imported with `from torch.cuda.amp import GradScaler` are rewritten with their import by " +
			"cuda-amp-import (PAM004).",
		Why: "Loss scaling exists for fp16, CUDA's autocast default. The TPU autocasts to bf16, which has fp32's " +
			"exponent range and needs no scaler, and a GradScaler on \"tpu\" is unconfirmed (TorchTPU documents none): " +
			"a disabled scaler is a pass-through (`scale(loss)` returns `loss`, `step(opt)` calls `opt.step()`), so " +
			"the training loop runs unchanged.",
		Safety: "Safe: on CUDA the same scaler runs; on a CPU-only machine the original scaler disabled itself too. " +
			"On the tpu target the fix is unsafe when the module mentions float16 (`torch.float16`, `.half()`): " +
			"fp16 training may need the scaler the fix disables.",
	}, gradScalerExample),
	Run: func(p *rule.Pass) {
		if !kit.Mentions(p.Src, "GradScaler") {
			return
		}
		dv := kit.NewDev(p)
		kit.CallsWith(p, []string{"GradScaler"}, func(call *ts.Node) {
			fn, q := kit.Callee(p, call)
			al, ok := kit.Arguments(p, call)
			if !ok || al.Splat {
				return
			}
			var pl *plan
			switch q {
			case "torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler":
				if importHandled(p, fn) || len(al.Positional) >= 5 {
					return
				}
				pl = scaler(p, dv, al, nil)
				pl.add(rule.Edit{Start: kit.Start(fn), End: kit.End(fn), New: "torch.amp.GradScaler"})
			case "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler":
				devNode := al.KwValue("device")
				if len(al.Positional) > 0 {
					devNode = al.Positional[0]
				}
				if devNode == nil {
					pl = scaler(p, dv, al, nil)
					break
				}
				s, ok := kit.DeviceString(p, devNode)
				if !ok || s.Index != "" || s.FString {
					return
				}
				pl = scaler(p, dv, al, &s)
			default:
				return
			}
			kit.Report(p, rule.Finding{Start: kit.Start(call), End: kit.End(call),
				Message: "gradient scaler for CUDA fp16" + pl.note, Fix: fixOf(p, dv, "Scale only where fp16 needs it", pl)})
		})
	},
}
