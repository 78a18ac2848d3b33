package amp

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaAutocastExample = rule.Example{
	Before: `import torch

with torch.cuda.amp.autocast():
    loss = model(x)
with torch.cuda.amp.autocast(True, torch.float16):
    out = model(y)
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

with torch.amp.autocast(DEVICE.type, enabled=DEVICE.type != "cpu"):
    loss = model(x)
with torch.amp.autocast(DEVICE.type, enabled=DEVICE.type != "cpu", dtype=torch.float16):
    out = model(y)
`,
	TPU: `import torch

with torch.amp.autocast("tpu", dtype=torch.bfloat16):
    loss = model(x)
with torch.amp.autocast("tpu", enabled=True, dtype=torch.bfloat16):
    out = model(y)
`,
}

// CudaAutocast rewrites torch.cuda.amp.autocast(...) to torch.amp.autocast.
var CudaAutocast = &rule.Rule{
	Code:   "PAM001",
	Name:   "cuda-amp-autocast",
	Family: Family,
	Safety: rule.Safe,
	// The rule reports only a call whose callee qualifies (through the
	// imports or a torch. chain) to torch.cuda.amp.autocast or
	// torch.cuda.amp.autocast_mode.autocast: each component of that name is
	// an identifier spelled in the file's code (the call's dotted callee or an
	// import's module or name), so both the words autocast and cuda occur
	// there (not maybe_autocast, is_autocast_enabled or is_torch_cuda_available).
	Needles: []string{`\bautocast\b & \bcuda\b`},
	Example: cudaAutocastExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.amp.autocast(...)` is CUDA-only (and deprecated)",
		What: "Rewrites `torch.cuda.amp.autocast(...)` (also through `from torch import cuda` or " +
			"`import torch.cuda.amp as amp`, as a context manager or a decorator) to " +
			"`torch.amp.autocast(<device type>, ...)`. Positional arguments become keywords, because " +
			"`torch.amp.autocast`'s second parameter is `dtype`, not `enabled`. Portable: the device type is " +
			"`DEVICE.type`, the dtype is left as written (CUDA's default stays fp16), and autocast is enabled only " +
			"where DEVICE is CUDA or a TPU (`enabled=DEVICE.type != \"cpu\"`, combined with an existing `enabled`). TPU: `\"tpu\"` with " +
			"`dtype=torch.bfloat16` (added when absent).\n\n" +
			"`functools.partial(torch.cuda.amp.autocast, ...)` gets the same rewrite of the arguments partial binds, " +
			"as an unsafe fix: where the partial is called, a positional argument would now bind to " +
			"`device_type` or `dtype` instead of `enabled`.\n\n" +
			"Names imported with `from torch.cuda.amp import autocast` are rewritten with their import by " +
			"cuda-amp-import (PAM004).",
		Why: "`torch.cuda.amp.autocast` autocasts CUDA ops only, so on a TPU or CPU the model silently runs in fp32; " +
			"it is deprecated since PyTorch 2.4. TorchTPU's autocast uses bf16, the MXU's input type.",
		Safety: "Safe. Portable, per host: on CUDA the call is the documented equivalent (same dtype, same " +
			"`enabled`); on a CPU-only, MPS or XPU host `torch.cuda.amp.autocast` disabled itself (CUDA is missing) " +
			"and the new call is disabled too (DEVICE is the CPU and `enabled` is False), so outputs stay fp32 " +
			"rather than turning bfloat16 under CPU autocast; on a TPU it autocasts. The tpu target's code names " +
			"\"tpu\" and runs only there. On the tpu target an explicit " +
			"`dtype=torch.float16` becomes `torch.bfloat16`, an unsafe fix (numerics change).",
	}, cudaAutocastExample),
	Run: func(p *rule.Pass) {
		if !kit.Mentions(p.Src, "autocast") {
			return
		}
		dv := kit.NewDev(p)
		kit.CallsWith(p, []string{"autocast"}, func(call *ts.Node) {
			fn, q, al, partial, ok := kit.Through(p, call)
			if !ok || q != "torch.cuda.amp.autocast" && q != "torch.cuda.amp.autocast_mode.autocast" || importHandled(p, fn) {
				return
			}
			f := rule.Finding{Start: kit.Start(call), End: kit.End(call), Message: "`torch.cuda.amp.autocast` autocasts CUDA ops only"}
			pl, ok := cudaAutocast(p, dv, al)
			if ok {
				pl.add(rule.Edit{Start: kit.Start(fn), End: kit.End(fn), New: "torch.amp.autocast"})
				if partial {
					pl.unsafe(partialNote)
				}
				f.Message += pl.note
				f.Fix = fixOf(p, dv, "Use torch.amp.autocast with the device type", pl)
			}
			kit.Report(p, f)
		})
	},
}
