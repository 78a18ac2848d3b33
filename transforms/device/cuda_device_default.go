package device

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var cudaDeviceDefaultExample = rule.Example{
	Before: `import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
config = {"device": "cuda", "lr": 3e-4}


def build(model, device="cuda"):
    return model
`,
	Portable: `import argparse
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

parser = argparse.ArgumentParser()
parser.add_argument("--device", default=DEVICE.type)
config = {"device": DEVICE.type, "lr": 3e-4}


def build(model, device=DEVICE.type):
    return model
`,
	TPU: `import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="tpu")
config = {"device": "tpu", "lr": 3e-4}


def build(model, device="tpu"):
    return model
`,
}

// CudaDeviceDefault rewrites "cuda" as the default of a device setting.
var CudaDeviceDefault = &rule.Rule{
	Code:   "PDV004",
	Name:   "cuda-device-default",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see siteNeedles.
	Needles: siteNeedles,
	Example: cudaDeviceDefaultExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "CUDA device as the default of a device setting",
		What: "Finds `\"cuda\"`, `\"cuda:N\"` and `f\"cuda:{expr}\"` as the default of a device setting: " +
			"`add_argument(\"--device\", default=...)` (argparse; also click's `option`) and the entries of its " +
			"`choices=[...]` (so the new default stays a valid choice and `--device tpu` is accepted), the value of a " +
			"`\"device\"` key in a dict literal, an assignment to a name or attribute containing `device` " +
			"(`device = \"cuda\"`, `self.device = ...`, dataclass fields `device: str = \"cuda\"`), a parameter " +
			"default (`def f(device=\"cuda\")`), and the fallback of `cfg.get(\"device\", \"cuda\")`, " +
			"`os.getenv(\"DEVICE\", \"cuda\")` and `getattr(args, \"device\", \"cuda\")`.\n\n" +
			"Portable: the value becomes `DEVICE.type` (a `str`, as before: `\"cuda\"`, `\"tpu\"`, `\"cpu\"`...); " +
			"an index becomes `str(device_at(i))` " +
			"(`\"cuda:i\"` on CUDA, the plain device type elsewhere; see cuda-device-string, PDV001). TPU: `\"tpu\"` (`\"tpu:0\"` for an index), " +
			"also where the module evaluates it on import: a `str` builds no device (unlike `torch.device(\"tpu\")`, " +
			"see cuda-device-string, PDV001), so importing the module works on every host.\n\n" +
			"In a library module (see \"Where DEVICE is defined\") a default evaluated on import moves to the call: " +
			"a parameter default becomes `DEVICE_ON_FIRST_USE`, a sentinel resolved first in the body (`if device is " +
			"DEVICE_ON_FIRST_USE: device = pallasify_device().type`), and a dataclass field becomes " +
			"`field(default_factory=lambda: pallasify_device().type)`, so importing the module does not look for the " +
			"accelerator. The sentinel is defined with the other helpers (in a package, in `_pallasify_device.py`).",
		Why: "A default of `\"cuda\"` makes the program fail before the user can say otherwise on a machine " +
			"without CUDA; these values usually flow into `torch.device(...)` or `.to(...)` later.",
		Safety: "Safe: the value keeps its type (`str`) and, on a CUDA machine, its value. In a library module the " +
			"moved parameter default is exact: a caller that passes `device=None` explicitly still passes `None` (torch's " +
			"default), since only the sentinel is resolved; the dataclass field is no longer a class attribute " +
			"(instances are unchanged). The tpu target treats " +
			"indices as cuda-device-string (PDV001) does: a per-process index is safe, any other is an unsafe fix.",
	}, cudaDeviceDefaultExample),
	Run: runCudaDeviceDefault,
}

func runCudaDeviceDefault(p *rule.Pass) {
	if !kit.Mentions(p.Src, "cuda") {
		return
	}
	dv := kit.NewDev(p)
	sites(p, func(st site) {
		if !st.isDflt {
			return
		}
		f, note := fix(p, dv, st)
		f = lazyDefault(p, st, f)
		kit.Report(p, rule.Finding{Start: kit.Start(st.node()), End: kit.End(st.node()),
			Message: "CUDA device as " + st.context + note, Fix: f})
	})
}
