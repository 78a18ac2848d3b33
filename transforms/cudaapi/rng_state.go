package cudaapi

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var rngStateExample = rule.Example{
	Before: `import torch

ckpt = {"cpu_rng": torch.get_rng_state(), "cuda_rng": torch.cuda.get_rng_state()}
torch.set_rng_state(ckpt["cpu_rng"])
torch.cuda.set_rng_state(ckpt["cuda_rng"])
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

ckpt = {"cpu_rng": torch.get_rng_state(), "cuda_rng": torch.accelerator.random.get_rng_state() if DEVICE.type != "cpu" else torch.get_rng_state()}
torch.set_rng_state(ckpt["cpu_rng"])
if DEVICE.type != "cpu":
    torch.get_device_module(DEVICE).set_rng_state(ckpt["cuda_rng"])
`,
	TPU: `import torch

ckpt = {"cpu_rng": torch.get_rng_state(), "cuda_rng": torch.accelerator.random.get_rng_state()}
torch.set_rng_state(ckpt["cpu_rng"])
torch.tpu.set_rng_state(ckpt["cuda_rng"])
`,
}

// RngState rewrites torch.cuda.get_rng_state/set_rng_state.
var RngState = &rule.Rule{
	Code:   "PCU010",
	Name:   "cuda-rng-state",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: rngStateExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.get_rng_state/set_rng_state` save and restore the CUDA generator only",
		What: "Portable: `torch.accelerator.random.get_rng_state(...)` / " +
			"`torch.get_device_module(DEVICE).set_rng_state(...)`, the generator of whichever accelerator `DEVICE` is " +
			"(`torch.accelerator.random` has no setter; a `device=` keyword of the getter becomes positional, its " +
			"parameter being positional-only). On a CPU-only machine there is no device generator: " +
			"`get_rng_state` gives the CPU generator's state (`torch.get_rng_state()`, so a checkpoint still has a " +
			"value of the same type) and `set_rng_state` does nothing (a state saved on a GPU does not fit the " +
			"CPU generator). `set_rng_state` as a statement of its own is put under `if DEVICE.type != \"cpu\":`. " +
			"An index argument other than 0 becomes `device_at(i)` (see cuda-device-string, PDV001); a " +
			"`\"cuda\"` device argument (the current device, which is the default) is dropped.\n\n" +
			"TPU: `torch.accelerator.random.get_rng_state()` / `torch.tpu.set_rng_state(state)` (public and " +
			"experimental in TorchTPU 0.2.0); a device argument is dropped (TorchTPU's generator calls work on the " +
			"current device only).\n\n" +
			"`get_rng_state_all`/`set_rng_state_all` are left alone: TorchTPU has no counterpart.",
		Why: "`torch.cuda.get_rng_state()` fails where there is no CUDA; checkpointing code that saves and restores " +
			"the generators would fail on TPU or CPU. `torch.tpu.get_rng_state()` is internal to TorchTPU 0.2.0 " +
			"(user code calling it raises RuntimeError from torch 2.13 on, pointing to " +
			"`torch.accelerator.random.get_rng_state`), and so is the " +
			"`torch.get_device_module(DEVICE).get_rng_state()` that reaches it on a TPU.",
		Safety: "Safe: on CUDA the same generator is read and written. Dropping an index that is neither 0 nor " +
			"per-process on the tpu target is unsafe (it named another device's generator).",
	}, rngStateExample),
	Run: runRngState,
}

func runRngState(p *rule.Pass) {
	cudaCalls(p, []string{"get_rng_state", "set_rng_state"}, func(c apiCall) {
		dv := kit.NewDev(p)
		f := c.finding(p, "reads or writes the CUDA random generator only")
		// The device argument: get_rng_state(device) / set_rng_state(state, device).
		var devArg *ts.Node
		nState := 0
		if c.name == "set_rng_state" {
			nState = 1
		}
		switch {
		case c.args.Splat || len(c.args.Positional) > nState+1:
			return
		case len(c.args.Positional) == nState+1:
			devArg = c.args.Positional[nState]
		case c.args.KwValue("device") != nil:
			devArg = c.args.KwValue("device")
		}
		if c.name == "set_rng_state" && len(c.args.Positional) == 0 && c.args.KwValue("new_state") == nil {
			return
		}
		// A device string ("cuda", positional or device=) is rewritten here;
		// cuda-device-string (PDV001) leaves these calls alone.
		var posStr *ts.Node
		if devArg != nil && devArg.Type() == "string" {
			s, ok := kit.DeviceString(p, devArg)
			if !ok || s.Index != "" {
				return
			}
			posStr = devArg
		}
		if p.Target == rule.TPU {
			edits := []rule.Edit{c.callee(rngCallee(c.name, "torch.tpu"))}
			safety := rule.Safe
			if devArg != nil && devArg.Type() != "string" {
				t := p.Text(devArg)
				if kit.IndexLike(t) && !kit.PerProcessIndex(t) {
					safety = rule.Unsafe
				}
				drop := devArg
				if kw := c.args.Keywords["device"]; kw != nil && kw.ChildByFieldName("value").Equal(devArg) {
					drop = kw
				}
				edits = append(edits, c.args.Drop(p.Src, drop))
			}
			if posStr != nil {
				drop := posStr
				if kw := c.args.Keywords["device"]; kw != nil {
					drop = kw
				}
				edits = append(edits, c.args.Drop(p.Src, drop))
			}
			f.Fix = kit.TorchFix("Call "+rngCallee(c.name, "torch.tpu"), safety, edits...)
			kit.Report(p, f)
			return
		}
		edits := []rule.Edit{c.callee(rngCallee(c.name, "torch.get_device_module("+dv.Name()+")"))}
		if c.name == "get_rng_state" && posStr == nil {
			edits = append(edits, c.positional("device")...)
		}
		at := false
		if devArg != nil && devArg.Type() != "string" {
			if t := p.Text(devArg); kit.IndexLike(t) && t != "0" {
				edits = append(edits,
					rule.Edit{Start: kit.Start(devArg), End: kit.Start(devArg), New: dv.AtName() + "("},
					rule.Edit{Start: kit.End(devArg), End: kit.End(devArg), New: ")"})
				at = true
			}
		}
		if posStr != nil {
			// "cuda" is the current device, which is also the default.
			drop := posStr
			if kw := c.args.Keywords["device"]; kw != nil {
				drop = kw
			}
			edits = append(edits, c.args.Drop(p.Src, drop))
		}
		cond := dv.Type() + ` != "cpu"`
		guarded := false
		if c.name == "set_rng_state" {
			if stmt := kit.ExprStatement(c.call); stmt != nil {
				var guard []rule.Edit
				if guard, guarded = kit.GuardStatement(p.Src, stmt, cond); guarded {
					edits = append(guard, edits...)
				} else {
					guarded = kit.Guarded(p.Src, stmt, cond)
				}
			}
		}
		if !guarded {
			alt := "torch.get_rng_state()"
			if c.name == "set_rng_state" {
				alt = "None"
			}
			tail := " if " + cond + " else " + alt
			if kit.Paren(c.call, "x", true) != "x" {
				edits = append(edits, rule.Edit{Start: kit.Start(c.call), End: kit.Start(c.call), New: "("})
				tail += ")"
			}
			edits = append(edits, rule.Edit{Start: kit.End(c.call), End: kit.End(c.call), New: tail})
		}
		if at {
			f.Fix = dv.AtFix("Use DEVICE's generator", rule.Safe, edits...)
		} else {
			f.Fix = dv.Fix("Use DEVICE's generator", rule.Safe, edits...)
		}
		kit.Report(p, f)
	})
}

// rngCallee is the replacement of torch.cuda.<name>: the getter is
// torch.accelerator.random's on both targets (TorchTPU's own is internal);
// torch.accelerator.random has no setter, so set_rng_state goes to the
// device module (module: "torch.tpu", or the portable
// torch.get_device_module(DEVICE)), where TorchTPU's is public.
func rngCallee(name, module string) string {
	if name == "get_rng_state" {
		return "torch.accelerator.random.get_rng_state"
	}
	return module + "." + name
}
