package device

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var cudaDeviceStringExample = rule.Example{
	Before: `import torch

DEFAULT = torch.device("cuda")


def load(path, model, local_rank):
    x = torch.zeros(4, device="cuda")
    model.to("cuda:1")
    state = torch.load(path, map_location="cuda")
    return torch.device(f"cuda:{local_rank}")
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


DEFAULT = DEVICE


def load(path, model, local_rank):
    x = torch.zeros(4, device=DEVICE)
    model.to(device_at(1))
    state = torch.load(path, map_location=DEVICE)
    return device_at(local_rank)
`,
	TPU: `import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

DEFAULT = DEVICE


def load(path, model, local_rank):
    x = torch.zeros(4, device="tpu")
    model.to("tpu:0")
    state = torch.load(path, map_location="tpu")
    return torch.device("tpu")
`,
}

// CudaDeviceString rewrites "cuda" device strings passed to torch APIs.
var CudaDeviceString = &rule.Rule{
	Code:   "PDV001",
	Name:   "cuda-device-string",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see siteNeedles.
	Needles: siteNeedles,
	Example: cudaDeviceStringExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "CUDA device string passed to a torch API",
		What: "Finds the strings `\"cuda\"`, `\"cuda:N\"` and `f\"cuda:{expr}\"` where they name a device in a call: " +
			"the argument of `torch.device(...)`, the first argument of `.to(...)`, `device=` of any call " +
			"(tensor factories, `torch.Generator`, `x.new_zeros`, your own functions), `map_location=` and " +
			"`torch.load(f, \"cuda\")`, `torch.set_default_device(...)`, a DataLoader's `pin_memory_device=`, and " +
			"the device type of `torch.get_autocast_dtype`/`set_autocast_dtype`, " +
			"`torch.is_autocast_enabled`/`set_autocast_enabled`, `torch.amp.is_autocast_available` (first " +
			"argument or `device_type=`) and `device_type=` of `torch.amp.custom_fwd`/`custom_bwd` (a `str`, like " +
			"`init_device_mesh`'s).\n\n" +
			"Portable: `torch.device(\"cuda\")` and torch-API arguments become `DEVICE` (the CUDA or TPU " +
			"device `torch.accelerator` reports, else the CPU; named `ACCEL_DEVICE` or `PALLASIFY_DEVICE` if the " +
			"module already binds `DEVICE`; `pallasify_device()` in a library module, see \"Where DEVICE is " +
			"defined\"). Arguments of functions that are not torch's get the string `DEVICE.type`, so their type " +
			"stays `str`.\n\n" +
			"A device with an index (`\"cuda:1\"`, `f\"cuda:{rank}\"`, `torch.device(\"cuda\", i)`, " +
			"`torch.device(\"cuda\", index=i)`) becomes `device_at(i)`, a helper defined once next to `DEVICE`: " +
			"`torch.device(DEVICE.type, i)` when `DEVICE` is CUDA, where one process may drive several GPUs and the " +
			"index picks one, and `DEVICE` itself everywhere else: a TPU process sees its one chip as `tpu:0` " +
			"whatever its rank, so `tpu:<rank>` would not exist, and the CPU has no indices. " +
			"Where the value must stay a `str` it is `str(device_at(i))`. The helper is named `accel_device_at` or " +
			"`pallasify_device_at` if the module already binds `device_at`. Every device-family rule uses this one " +
			"form for an index (`.cuda(i)`, `get_device_properties(i)`, ...).\n\n" +
			"The device-selection idiom is rewritten as a whole, on both targets: `\"cuda\" if torch.cuda.is_available() " +
			"else \"cpu\"` (also negated, with `torch.cuda.device_count() > 0`, with `torch.device(...)` on either side, and " +
			"with an index) says what `DEVICE` says, so `torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")` " +
			"becomes `DEVICE`, the `str` form `DEVICE.type`, `\"cuda:0\"` `device_at(0)`; a further condition stays " +
			"(`... and not args.cpu` gives `DEVICE if not args.cpu else torch.device(\"cpu\")`). The CUDA check inside is " +
			"part of this fix (cuda-is-available, PCU001, reports it as fixed by it). The idiom is a device choice " +
			"wherever it stands, even where its value is only printed or compared.\n\n" +
			"TPU: the string becomes `\"tpu\"` (`\"tpu:0\"` for `\"cuda:N\"`). " + kit.ImportTimeDoc + "\n\n" +
			"Comments, docstrings, log messages and dict keys are never touched: only a string that is " +
			"exactly a CUDA device, in one of the contexts above (through parentheses and `a if c else b`), is.",
		Why: "`\"cuda\"` fails on a machine without CUDA. TorchTPU registers `\"tpu\"` as a native device " +
			"(PrivateUse1, renamed) once torch_tpu is installed; `torch.accelerator` (PyTorch 2.6+) names whichever accelerator is present.",
		Safety: "Safe: on a CUDA machine the portable code picks the same device. On TPU, `\"cuda\"`, `\"cuda:0\"` and " +
			"per-process indices (an expression naming a rank or a GPU slot, such as `f\"cuda:{local_rank}\"`) become the " +
			"process's one chip, which is what torchrun gives each rank. Any other index (`\"cuda:1\"`, " +
			"`torch.device(\"cuda\", i)`) is an unsafe fix on the tpu target: a process has one TPU chip, so work " +
			"that was spread over several GPUs lands on one.",
	}, cudaDeviceStringExample),
	Run: runCudaDeviceString,
}

func runCudaDeviceString(p *rule.Pass) {
	if !kit.Mentions(p.Src, "cuda") {
		return
	}
	dv := kit.NewDev(p)
	sites(p, func(st site) {
		if st.isDflt {
			return
		}
		f, note := fix(p, dv, st)
		kit.Report(p, rule.Finding{Start: kit.Start(st.node()), End: kit.End(st.node()),
			Message: "CUDA device string in " + st.context + note, Fix: f})
	})
}
