package compile

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var tpuSettingsExample = rule.Example{
	Before: `import torch

model = torch.compile(model)
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

model = torch.compile(model, backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))
`,
	TPU: `import torch

model = torch.compile(model, backend="tpu", dynamic=False)
`,
}

// tpuSettingsNeedles: the call or decorator is qualified as torch.compile,
// so the file spells torch.compile (not torch.compiler), or binds compile or torch under another
// name with an import (from torch import compile; import torch as th). A
// qualified callee or decorator is code, never a string literal, so `\q`
// (rule.StringStart) is sound for torch.compile; `compile` bound by
// `from torch import` is called or imported with no "." before it (`\m`:
// re.compile is not it).
var tpuSettingsNeedles = []string{`\qtorch.compile\b`, `from torch import & \m\bcompile\b`, `torch as & \bcompile\b`}

// TPUSettings gives existing torch.compile calls the TPU backend and static shapes.
var TPUSettings = &rule.Rule{
	Code:    "PCM001",
	Name:    "compile-tpu-settings",
	Family:  Family,
	Safety:  rule.Safe,
	Needles: tpuSettingsNeedles,
	Example: tpuSettingsExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "torch.compile without backend=\"tpu\" and dynamic=False",
		What: "Adds `backend=` and `dynamic=` to `torch.compile(...)` calls and `@torch.compile` decorators that lack " +
			"them, and adjusts existing values: for `--target tpu` the backend becomes `\"tpu\"` and `dynamic` becomes " +
			"`False`; for `--target portable` each value becomes a choice on `DEVICE.type`, so CUDA and CPU keep the " +
			"backend and `dynamic` they had. Inductor-only `mode=`/`options=` become `None` (their default) for tpu " +
			"and are made conditional for portable. The `eager` and `aot_eager` debugging backends are kept.",
		Why: "TorchTPU compiles through `backend=\"tpu\"` (FX → StableHLO → XLA, not Inductor), which is currently " +
			"required, and `dynamic=False` is mandatory: every shape change recompiles, and compiles take minutes " +
			"(TorchTPU's compile guide). Inductor's `mode=\"reduce-overhead\"` uses CUDA graphs, which do not exist on TPU.",
		Safety: "Safe when only missing keywords are added, an explicit `\"inductor\"` (the default) or PyTorch/XLA's " +
			"`\"openxla\"` (TorchTPU's predecessor: the tpu backend replaces it) is replaced, or " +
			"`dynamic=None` becomes `False`, and always for the portable target, whose choices leave CUDA and CPU runs " +
			"unchanged. For `--target tpu`, overriding a choice the code made (another backend such as " +
			"`\"cudagraphs\"` or a variable, `dynamic=True` or a computed value, `mode=`/`options=`) is a second, " +
			"unsafe finding on the same call: its fix discards that choice, so variable-shape inputs must be padded " +
			"or bucketed. The safe finding still adds the missing keywords.",
	}, tpuSettingsExample),
	Run: runTPUSettings,
}

// debugBackends run on any device and are kept as they are.
var debugBackends = map[string]bool{"eager": true, "aot_eager": true, "tpu": true}

func runTPUSettings(p *rule.Pass) {
	dev := kit.NewDev(p)
	kit.Calls(p, func(call *ts.Node) {
		if kit.CallName(p, call) != "torch.compile" {
			return
		}
		args := kit.Args(call)
		if args == nil || kit.HasSplat(args) {
			return
		}
		if len(kit.Positional(args)) > 1 {
			return // positional fullgraph/dynamic/backend: too unusual to edit
		}
		settingsFinding(p, dev, call, args)
	})
	kit.Nodes(p, "decorator", func(d *ts.Node) {
		for _, c := range ts.Children(d) {
			if c.Type() != "call" && kit.Qualified(p, c) == "torch.compile" {
				kws := compileKwargs(p.Target, dev)
				p.Report(kit.Finding(c, compileMessage(p.Target, nil),
					fixFor(dev, "Pass the TPU compile settings", rule.Safe,
						[]rule.Edit{{Start: kit.End(c), End: kit.End(c), New: "(" + strings.Join(kws, ", ") + ")"}},
						p.Target == rule.Portable)))
			}
		}
	})
}

func compileMessage(target rule.Target, extra []string) string {
	msg := `torch.compile needs backend="tpu" and dynamic=False on TPU`
	if target == rule.Portable {
		msg += `; choose them by DEVICE.type so CUDA keeps its settings`
	}
	if len(extra) > 0 {
		msg += "; " + strings.Join(extra, "; ")
	}
	return msg
}

// settingsFinding reports what a torch.compile call lacks. Every edit
// replaces a keyword's value or appends keywords, so the safe part and the
// unsafe part (tpu target only: overriding a backend, dynamic or mode the
// code chose) never overlap and are reported as two findings: the safe one
// applies by default, the unsafe one with --unsafe-fixes.
func settingsFinding(p *rule.Pass, dev *kit.Dev, call, args *ts.Node) {
	var safe, unsafe []rule.Edit
	var add []string
	var notes []string
	portable := p.Target == rule.Portable
	replace := func(n *ts.Node, text string, sure bool) {
		e := rule.Edit{Start: kit.Start(n), End: kit.End(n), New: text}
		if sure {
			safe = append(safe, e)
		} else {
			unsafe = append(unsafe, e)
		}
	}

	// backend=
	if v := kit.KwargValue(p, args, "backend"); v == nil {
		if portable {
			add = append(add, "backend="+portableChoice(dev, `"tpu"`, `"inductor"`))
		} else {
			add = append(add, `backend="tpu"`)
		}
	} else if s, lit := kit.PlainString(p, v); lit && debugBackends[s] {
		// kept
	} else if !isPortableChoice(p, v) {
		if portable {
			replace(v, portableChoice(dev, `"tpu"`, p.Text(v)), true)
		} else {
			// the default spelled out, or PyTorch/XLA's backend, which TorchTPU replaces
			sure := lit && (s == "inductor" || s == "openxla")
			replace(v, `"tpu"`, sure)
			if !sure {
				notes = append(notes, "backend "+p.Text(v)+" does not run on TPU")
			}
		}
	}

	// dynamic=
	if v := kit.KwargValue(p, args, "dynamic"); v == nil {
		if portable {
			add = append(add, "dynamic="+portableChoice(dev, "False", "None"))
		} else {
			add = append(add, "dynamic=False")
		}
	} else if b, lit := kit.Bool(v); (lit && !b) || isPortableChoice(p, v) {
		// already static, or already chosen by device
	} else if portable {
		replace(v, portableChoice(dev, "False", p.Text(v)), true)
	} else {
		replace(v, "False", kit.IsNone(v))
		if !kit.IsNone(v) {
			notes = append(notes, "dynamic="+p.Text(v)+" becomes False: pad or bucket variable shapes")
		}
	}

	// mode= and options= are Inductor settings (None is their default).
	for _, name := range []string{"mode", "options"} {
		v := kit.KwargValue(p, args, name)
		if v == nil {
			continue
		}
		if s, lit := kit.PlainString(p, v); kit.IsNone(v) || (lit && s == "default") || isPortableChoice(p, v) {
			continue
		}
		if portable {
			replace(v, portableChoice(dev, "None", p.Text(v)), true)
		} else {
			replace(v, "None", false)
			notes = append(notes, name+"= is an Inductor setting the tpu backend does not take")
		}
	}
	if len(add) > 0 {
		safe = append(safe, kit.AddKwargs(p, args, add)...)
	}
	if len(safe) > 0 {
		msg := compileMessage(p.Target, nil)
		if len(unsafe) > 0 {
			msg = compileMessage(p.Target, []string{"see the next finding for the settings the code chose"})
		}
		p.Report(kit.Finding(call, msg, fixFor(dev, "Pass the TPU compile settings", rule.Safe, safe, portable)))
	}
	if len(unsafe) > 0 {
		p.Report(kit.Finding(call, "torch.compile settings chosen for CUDA: "+strings.Join(notes, "; "),
			fixFor(dev, "Override them with the TPU settings", rule.Unsafe, unsafe, false)))
	}
}
