package amp

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var autocastCudaExample = rule.Example{
	Before: `import torch

with torch.autocast("cuda", dtype=torch.bfloat16):
    loss = model(x)
ctx = torch.amp.autocast(device_type="cuda")
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

with torch.autocast(DEVICE.type, dtype=torch.bfloat16, enabled=DEVICE.type != "cpu"):
    loss = model(x)
ctx = torch.amp.autocast(device_type=DEVICE.type, enabled=DEVICE.type != "cpu")
`,
	TPU: `import torch

with torch.autocast("tpu", dtype=torch.bfloat16):
    loss = model(x)
ctx = torch.amp.autocast(device_type="tpu", dtype=torch.bfloat16)
`,
}

// AutocastCuda rewrites torch.autocast("cuda") and torch.amp.autocast("cuda").
var AutocastCuda = &rule.Rule{
	Code:   "PAM002",
	Name:   "autocast-cuda-device",
	Family: Family,
	Safety: rule.Safe,
	// The rule reports only a call whose callee qualifies to torch.autocast,
	// torch.amp.autocast or torch.amp.autocast_mode.autocast (so the word
	// autocast is spelled in code: the callee or the import that binds it)
	// and whose device argument is the plain string literal "cuda"
	// (kit.DeviceString with no index and no f-string: a lone string_content
	// matching ^cuda$, so the word cuda stands between the quotes).
	Needles: []string{`\bautocast\b & \bcuda\b`},
	Example: autocastCudaExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.autocast(\"cuda\")` names CUDA as the autocast device",
		What: "Rewrites the device type `\"cuda\"` (first argument or `device_type=`) of `torch.autocast`, " +
			"`torch.amp.autocast` and `torch.amp.autocast_mode.autocast` (also imported by name, and where " +
			"`functools.partial(torch.autocast, \"cuda\", ...)` binds it). Portable: " +
			"`DEVICE.type`, enabled only where DEVICE is CUDA or a TPU (`enabled=DEVICE.type != \"cpu\"`, combined " +
			"with an existing `enabled=`). TPU: `\"tpu\"`, with `dtype=torch.bfloat16` added when no dtype is given.",
		Why: "Autocast only affects ops on the device type it names: with `\"cuda\"` on a TPU nothing is autocast, " +
			"so the model runs in fp32, slower and with more memory.",
		Safety: "Safe. Portable, per host: on CUDA the same autocast runs (same dtype, same `enabled`); on a " +
			"CPU-only, MPS or XPU host the original autocast on \"cuda\" disabled itself (CUDA is missing), and so " +
			"does the new one (DEVICE is the CPU there and `enabled` is False), so the model keeps running in fp32 " +
			"instead of CPU bf16 autocast; on a TPU it autocasts with TorchTPU's dtype. The tpu target's code names " +
			"\"tpu\" and runs only there. On the tpu target an explicit `torch.float16` becomes " +
			"`torch.bfloat16`, an unsafe fix (numerics change).",
	}, autocastCudaExample),
	Run: func(p *rule.Pass) {
		if !kit.Mentions(p.Src, "autocast") {
			return
		}
		dv := kit.NewDev(p)
		kit.CallsWith(p, []string{"autocast"}, func(call *ts.Node) {
			_, q, al, _, ok := kit.Through(p, call)
			if !ok || q != "torch.autocast" && q != "torch.amp.autocast" && q != "torch.amp.autocast_mode.autocast" {
				return
			}
			devNode := al.KwValue("device_type")
			var dtype *ts.Node
			if len(al.Positional) > 0 {
				devNode = al.Positional[0]
			}
			if len(al.Positional) > 1 {
				dtype = al.Positional[1]
			} else {
				dtype = al.KwValue("dtype")
			}
			s, ok := kit.DeviceString(p, devNode)
			if !ok || s.Index != "" || s.FString {
				return
			}
			enabled := al.KwValue("enabled")
			if len(al.Positional) > 2 {
				enabled = al.Positional[2]
			}
			pl := &plan{}
			tpuDtype(p, pl, al, dtype, "")
			gateAutocast(p, dv, pl, al, enabled, "")
			if p.Target == rule.TPU {
				pl.add(s.Replace(s.Literal("tpu")))
			} else {
				pl.add(s.Replace(dv.Type()))
			}
			kit.Report(p, rule.Finding{Start: kit.Start(call), End: kit.End(call),
				Message: "autocast on \"cuda\" does nothing on another device" + pl.note,
				Fix:     fixOf(p, dv, "Autocast on the device in use", pl)})
		})
	},
}
