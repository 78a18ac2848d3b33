package cudaapi

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

// memoryNames are the torch.cuda memory calls the rule rewrites.
var memoryNames = []string{"memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
	"memory_cached", "max_memory_cached", "memory_stats", "memory_summary", "mem_get_info", "empty_cache",
	"reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached", "reset_accumulated_memory_stats"}

// neutral is the Python expression for the value a memory call returns where
// the backend has no memory statistics.
const neutral = `{"memory_stats": {}, "memory_summary": "", "mem_get_info": (0, 0)}.get(
        name, None if name == "empty_cache" or name.startswith("reset_") else 0
    )`

// The helpers' docstrings, and those earlier versions wrote (longer than 100
// columns), by target.
const (
	portableDoc = `"""pallasify: torch.cuda's memory call ` + "`name`" + ` on DEVICE's backend.

    Returns a neutral value where the backend has none.
    """`
	legacyPortableDoc = `"""pallasify: torch.cuda's memory call ` + "`name`" + ` on DEVICE's backend; a neutral value where it has none."""`
	tpuDoc            = `"""pallasify: TorchTPU has no torch.cuda-style memory statistics.

    Uses torch.accelerator.memory where it works, else returns a neutral value.
    """`
	legacyTPUDoc = `"""pallasify: TorchTPU has no torch.cuda-style memory statistics; use torch.accelerator.memory where it works, else a neutral value."""`
)

// portableHelper is the module-level helper for the portable target.
func portableHelper(fn, dev string) string {
	return "def " + fn + `(name, *args, **kwargs):
    ` + portableDoc + `
    if ` + dev + `.type != "cpu":
        call = getattr(torch.get_device_module(` + dev + `), name, None)
        if call is None:
            memory = getattr(torch.accelerator, "memory", None)
            call = getattr(memory, {"mem_get_info": "get_memory_info"}.get(name, name), None)
        if call is not None:
            try:
                return call(*args, **kwargs)
            except (AttributeError, NotImplementedError, RuntimeError):
                pass
    return ` + neutral + "\n"
}

// tpuHelper is the module-level helper for the tpu target. It never calls
// torch.tpu memory functions: TorchTPU has none, and the unrelated Sophgo
// package of the same import name (Sophgo's torch-tpu) does.
func tpuHelper(fn string) string {
	return "def " + fn + `(name, *args, **kwargs):
    ` + tpuDoc + `
    memory = getattr(torch.accelerator, "memory", None)
    call = getattr(memory, {"mem_get_info": "get_memory_info"}.get(name, name), None)
    if call is not None and torch.accelerator.is_available():
        try:
            return call(*args, **kwargs)
        except (AttributeError, NotImplementedError, RuntimeError):
            pass
    return ` + neutral + "\n"
}

// legacyHelper is the helper fn earlier versions wrote for the target: a
// module holding it keeps the name.
func legacyHelper(fn string, target rule.Target, dev string) string {
	if target == rule.TPU {
		return strings.Replace(tpuHelper(fn), tpuDoc, legacyTPUDoc, 1)
	}
	return strings.Replace(portableHelper(fn, dev), portableDoc, legacyPortableDoc, 1)
}

var memoryAPIExample = rule.Example{
	Before: `import torch

print(torch.cuda.max_memory_allocated() / 2**30)
torch.cuda.empty_cache()
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


def _accelerator_memory(name, *args, **kwargs):
    """pallasify: torch.cuda's memory call ` + "`name`" + ` on DEVICE's backend.

    Returns a neutral value where the backend has none.
    """
    if DEVICE.type != "cpu":
        call = getattr(torch.get_device_module(DEVICE), name, None)
        if call is None:
            memory = getattr(torch.accelerator, "memory", None)
            call = getattr(memory, {"mem_get_info": "get_memory_info"}.get(name, name), None)
        if call is not None:
            try:
                return call(*args, **kwargs)
            except (AttributeError, NotImplementedError, RuntimeError):
                pass
    return {"memory_stats": {}, "memory_summary": "", "mem_get_info": (0, 0)}.get(
        name, None if name == "empty_cache" or name.startswith("reset_") else 0
    )


print(_accelerator_memory("max_memory_allocated") / 2**30)
_accelerator_memory("empty_cache")
`,
	TPU: `import torch


def _tpu_memory(name, *args, **kwargs):
    """pallasify: TorchTPU has no torch.cuda-style memory statistics.

    Uses torch.accelerator.memory where it works, else returns a neutral value.
    """
    memory = getattr(torch.accelerator, "memory", None)
    call = getattr(memory, {"mem_get_info": "get_memory_info"}.get(name, name), None)
    if call is not None and torch.accelerator.is_available():
        try:
            return call(*args, **kwargs)
        except (AttributeError, NotImplementedError, RuntimeError):
            pass
    return {"memory_stats": {}, "memory_summary": "", "mem_get_info": (0, 0)}.get(
        name, None if name == "empty_cache" or name.startswith("reset_") else 0
    )


print(_tpu_memory("max_memory_allocated") / 2**30)
_tpu_memory("empty_cache")
`,
}

// MemoryAPI rewrites torch.cuda memory statistics and empty_cache.
var MemoryAPI = &rule.Rule{
	Code:   "PCU009",
	Name:   "cuda-memory-api",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: memoryAPIExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "torch.cuda memory statistics and `empty_cache()`",
		What: "Rewrites `torch.cuda.` " + strings.Join(memoryNames, ", ") + " to a call of a small helper defined once " +
			"after the imports (for a package's library modules once per package, in `_pallasify_device.py`), which returns the real value where the backend has one and a neutral value " +
			"(0, `{}`, `\"\"`, `(0, 0)`, or `None` for `empty_cache`/`reset_*`) where it has none.\n\n" +
			"Portable (`_accelerator_memory`): DEVICE's backend module (`torch.cuda` on a CUDA machine), then " +
			"`torch.accelerator.memory` (PyTorch 2.9+), else neutral; never called on the CPU. " +
			"TPU (`_tpu_memory`): `torch.accelerator.memory` when present and working, else neutral. If the module " +
			"already binds the helper's name, `_pallasify_` is prefixed.",
		Why: "TorchTPU has no `memory_allocated`, `max_memory_allocated`, `memory_reserved`, `empty_cache`, " +
			"`mem_get_info` or `memory_stats` (its device module has only the unstable `torch.tpu._hbm_usage_summary()`); whether `torch.accelerator.memory` works on " +
			"it is unconfirmed, so every call is probed and guarded rather than trusted. `torch.tpu` memory calls are " +
			"never used: the unrelated Sophgo `torch_tpu` package has them.",
		Safety: "Safe: on a CUDA machine the same `torch.cuda` function runs. Elsewhere statistics read as 0 and " +
			"`empty_cache()` does nothing, where the original raised; logs that print memory use then print 0.",
	}, memoryAPIExample),
	Run: runMemoryAPI,
}

func runMemoryAPI(p *rule.Pass) {
	var fn, text string
	var dv *kit.Dev
	setup := func() {
		if fn != "" {
			return
		}
		base := "_accelerator_memory"
		helper := func(name string) string {
			if p.Target == rule.TPU {
				return tpuHelper(name)
			}
			return portableHelper(name, dv.HelperDevice())
		}
		if p.Target == rule.TPU {
			base = "_tpu_memory"
		} else {
			dv = kit.NewDev(p)
		}
		bound := kit.Bindings(p, base)
		fn = base
		legacy := func(name string) string {
			if p.Target == rule.TPU {
				return legacyHelper(name, rule.TPU, "")
			}
			return legacyHelper(name, rule.Portable, dv.Name())
		}
		if bound[fn] != 0 && !kit.OwnHelper(p, fn, helper(fn), legacy(fn)) {
			fn = "_pallasify" + base
		}
		text = helper(fn)
	}
	cudaCalls(p, memoryNames, func(c apiCall) {
		setup()
		f := c.finding(p, "is a CUDA memory call; TorchTPU has no memory statistics")
		edits := []rule.Edit{c.callee(fn), c.args.InsertFirst(`"` + c.name + `"`)}
		pre := kit.SharedPrelude(p, rule.Prelude{Key: "10-memory", Text: text, Marker: "def " + fn + "(", Imports: []string{"import torch"}}, fn)
		if p.Target == rule.TPU {
			f.Fix = kit.TorchFix("Call "+fn, rule.Safe, edits...)
			f.Fix.Preludes = []rule.Prelude{pre}
		} else {
			f.Fix = dv.Fix("Call "+fn, rule.Safe, edits...)
			f.Fix.Preludes = append(f.Fix.Preludes, pre)
		}
		kit.Report(p, f)
	})
}
